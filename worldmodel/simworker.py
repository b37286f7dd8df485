"""The simulator worker: runs inside the sandbox (:mod:`worldmodel.sandbox`), standard library only.

Started as ``python -I -S simworker.py FILTER``: it loads the seccomp filter ``FILTER`` (raw
BPF; empty string: none, the caller's explicit opt-out), moves the protocol to private file
descriptors (the untrusted code's ``print`` goes to a bounded buffer, ``input()`` sees end
of file), then answers one JSON request per line on the protocol channel.

The simulator is a Python file defining a class (``entry``) with a method that lists the
actions available now (``actions``: a dict's keys or a list of strings), a method that takes
one (``step``), and attributes (or zero-argument methods) for "the game is over" (``done``)
and "it was won" (``won``). Every state the worker holds is a *node*: a live simulator
object plus the module ``random``'s state at that point, kept as a deep copy (a snapshot)
so that any number of actions can be tried from it. Requests:

``load {path, entry, init, seed, actions, step, done, won, observation, exclude, refresh}``
    import the file, build ``entry(**init)`` with ``random.seed(seed)``; node 0 is the result.
``has {names}``            which of ``names`` the entry class defines (for validity checks).
``call {id, methods}``     call zero-argument methods in turn on one copy of a node; their
                           values' reprs, or the first that raised.
``actions {id, inplace}``  the action list of a node (``inplace``: on the node itself, which
                           a TextGame's ``step`` then reads; otherwise on a copy).
``children {id, actions, store, refresh, dedupe, leaf}`` try each action from a copy of node
                           ``id`` (calling the action lister first if ``refresh``, default the spec's);
                           per action the child's fingerprint, done / won, observation (first 400
                           characters), and a new node id when ``store`` and the fingerprint is new
                           to this worker (any fingerprint without ``dedupe``); or the error the
                           code raised. ``leaf``: only the error or done / won (no fingerprint).
                           ``blank {name: value}``: set these attributes of the child before naming
                           and keeping it (ones the caller has shown nothing reads).
``replay {path}``          a node rebuilt from node 0 by stepping ``path`` (a list of actions).
``fingerprint {id}``, ``drop {ids}``, ``stats``.

**Fingerprint** (the state's name): SHA-256 of a canonical serialisation of the simulator
object graph: objects by class name and attributes in sorted order, lists and tuples in
order, dicts and sets sorted by key, shared and cyclic references as back-references in
visit order, ``random.Random`` objects by their internal state, functions and classes by
qualified name; plus the module ``random``'s global state. The attributes named in
``exclude`` on the simulator object itself are left out (by default the last observation
text, the cached action dict, and the step counter; see :class:`worldmodel.simulator.SimulatorSpec`).
"""

import array
import copy
import ctypes
import hashlib
import importlib.util
import io
import json
import os
import pickle
import random
import sys
import traceback
import types

OUTPUT_KEEP = 4000          # characters of the code's own printing kept for error messages


class _Capped(io.TextIOBase):
    """A text stream that keeps only the last ``OUTPUT_KEEP`` characters written to it."""

    def __init__(self):
        self.tail = ""

    def writable(self):
        return True

    def write(self, s):
        s = str(s)
        self.tail = (self.tail + s)[-OUTPUT_KEEP:]
        return len(s)


def _load_filter(path):
    if not path:
        return
    data = open(path, "rb").read()

    class Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    buf = ctypes.create_string_buffer(data, len(data))
    prog = Prog(len(data) // 8, ctypes.addressof(buf))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    if libc.prctl(22, 2, ctypes.byref(prog), 0, 0) != 0:  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")
    _load_filter.buffer = buf  # keep alive


# ---------------------------------------------------------------------------
# Canonical fingerprints
# ---------------------------------------------------------------------------

_ATOMS = (type(None), bool, int, float, complex, str, bytes)
_ATOM_SET = frozenset(_ATOMS)


def _key_text(k):
    if isinstance(k, _ATOMS):
        return type(k).__name__ + ":" + repr(k)
    return "obj:" + type(k).__qualname__


class Canon:
    def __init__(self, exclude=()):
        self.exclude = frozenset(exclude)
        self.out = []
        self.memo = {}
        self.keep = []

    def emit(self, x, top=False):
        out = self.out
        atoms = _ATOM_SET
        t = type(x)
        if t in atoms:
            out.append(t.__name__[:2] + repr(x))
            return
        i = self.memo.get(id(x))
        if i is not None:
            out.append("@%d" % i)
            return
        self.memo[id(x)] = len(self.memo)
        self.keep.append(x)
        emit = self.emit
        if t is list or t is tuple:
            out.append("[" if t is list else "(")
            for v in x:
                tv = type(v)
                if tv in atoms:
                    out.append(tv.__name__[:2] + repr(v))
                else:
                    emit(v)
            out.append("]")
        elif t is dict:
            out.append("{")
            try:
                items = sorted(x.items()) if all(type(k) is str for k in x) else None
            except TypeError:
                items = None
            if items is None:
                items = sorted(x.items(), key=lambda kv: _key_text(kv[0]))
            for k, v in items:
                tk, tv = type(k), type(v)
                if tk is str:
                    out.append("st" + repr(k))
                else:
                    emit(k)
                if tv in atoms:
                    out.append(tv.__name__[:2] + repr(v))
                else:
                    emit(v)
            out.append("}")
        elif t is set or t is frozenset:
            out.append("<")
            for v in sorted(x, key=_key_text):
                emit(v)
            out.append(">")
        elif isinstance(x, random.Random):
            out.append("R" + _rng_text(x.getstate()))
        elif isinstance(x, (types.FunctionType, types.BuiltinFunctionType, types.MethodType, type,
                            types.ModuleType)):
            out.append("f" + getattr(x, "__module__", "") + "." + getattr(x, "__qualname__", repr(type(x))))
        else:
            names = {}
            d = getattr(x, "__dict__", None)
            if isinstance(d, dict):
                names.update(d)
            for cls in t.__mro__:
                for slot in getattr(cls, "__slots__", ()) or ():
                    if isinstance(slot, str) and hasattr(x, slot) and slot not in names:
                        names[slot] = getattr(x, slot)
            if not names and not isinstance(d, dict):
                out.append("?" + t.__qualname__)
                return
            out.append("O" + t.__qualname__)
            for k in sorted(names):
                if top and k in self.exclude:
                    continue
                out.append("." + k)
                v = names[k]
                tv = type(v)
                if tv in atoms:
                    out.append(tv.__name__[:2] + repr(v))
                else:
                    emit(v)
            out.append(";")


def _rng_text(state):
    """A ``random.Random`` state (version, 625 words, gauss_next) as a short exact text."""
    try:
        version, words, gauss = state
        return "%d:%s:%r" % (version, hashlib.sha256(array.array("Q", words).tobytes()).hexdigest(), gauss)
    except (TypeError, ValueError, OverflowError):
        return repr(state)


def fingerprint(obj, exclude, global_state):
    c = Canon(exclude)
    c.emit(obj, top=True)
    c.out.append("G" + _rng_text(global_state))
    h = hashlib.sha256("\x1f".join(c.out).encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:32]


# ---------------------------------------------------------------------------
# The simulator
# ---------------------------------------------------------------------------


class Sim:
    def __init__(self, req):
        self.spec = req
        self.entry = req.get("entry", "TextGame")
        self.actions_name = req.get("actions", "generatePossibleActions")
        self.step_name = req.get("step", "step")
        self.done_name = req.get("done", "gameOver")
        self.won_name = req.get("won", "gameWon")
        self.obs_name = req.get("observation", "observationStr")
        self.exclude = tuple(req.get("exclude", ()))
        self.refresh = bool(req.get("refresh", True))
        self.fp_mode = req.get("fingerprint", "canonical")
        self.nodes = {}          # id -> (object, global random state)
        self.seen = set()        # fingerprints this worker has stored a node for
        self.next_id = 0
        path = req["path"]
        spec = importlib.util.spec_from_file_location("simulator_under_test", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules["simulator_under_test"] = module
        random.seed(int(req.get("seed", 0)))
        self.stage = "import"
        spec.loader.exec_module(module)
        self.module = module
        self.stage = "init"
        cls = getattr(module, self.entry, None)
        if cls is None:
            raise LookupError("the file defines no %s" % self.entry)
        self.cls = cls
        random.seed(int(req.get("seed", 0)))
        obj = cls(**dict(req.get("init", {})))
        self.stage = "ready"
        self.root = self.store(obj, random.getstate())

    # -- nodes ------------------------------------------------------------
    def store(self, obj, gstate, snap=None):
        """Keep a snapshot of ``obj``: pickled bytes where the object pickles (fast to copy,
        compact), else the object itself (copied with ``copy.deepcopy``)."""
        i = self.next_id
        self.next_id += 1
        self.nodes[i] = (snap if snap is not None else self.snapshot(obj), gstate)
        return i

    def snapshot(self, obj):
        try:
            return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # noqa: BLE001 - an object graph pickle cannot take (a module, a lambda)
            return obj

    def live(self, i):
        """The node's object itself (for in-place calls); the snapshot is replaced by it."""
        snap, gstate = self.nodes[i]
        if isinstance(snap, bytes):
            snap = pickle.loads(snap)
            self.nodes[i] = (snap, gstate)
        return snap, gstate

    def copy(self, i):
        snap, gstate = self.nodes[i]
        if isinstance(snap, bytes):
            return pickle.loads(snap), gstate
        memo = {id(m): m for m in list(sys.modules.values())}
        return copy.deepcopy(snap, memo), gstate

    def listed(self, obj):
        acts = getattr(obj, self.actions_name)()
        if isinstance(acts, dict):
            acts = list(acts.keys())
        else:
            acts = list(acts)
        return [a if isinstance(a, str) else str(a) for a in acts]

    def flag(self, obj, name):
        if not hasattr(obj, name):
            return None
        v = getattr(obj, name)
        if callable(v):
            v = v()
        return bool(v)

    def observation(self, obj):
        v = getattr(obj, self.obs_name, None)
        if callable(v):
            try:
                v = v()
            except Exception as exc:  # noqa: BLE001 - the code under test
                return "<observation raised %s>" % type(exc).__name__
        return "" if v is None else str(v)[:400]

    def fp(self, obj, gstate, snap=None):
        """The state's name. ``canonical`` (default): :func:`fingerprint`. ``pickle``: SHA-256 of the
        pickled object graph (no exclusions; finer than canonical, as dict insertion order counts,
        so two histories may get two names for one state, never one name for two states)."""
        if self.fp_mode == "pickle":
            if snap is None:
                snap = self.snapshot(obj)
            if isinstance(snap, bytes):
                return hashlib.sha256(snap + _rng_text(gstate).encode()).hexdigest()[:32]
        return fingerprint(obj, self.exclude, gstate)

    def step_from(self, i, action, refresh):
        obj, gstate = self.copy(i)
        random.setstate(gstate)
        if refresh:
            getattr(obj, self.actions_name)()
        getattr(obj, self.step_name)(action)
        return obj, random.getstate()


def _error(exc, limit=3):
    frames = traceback.extract_tb(exc.__traceback__)
    me = os.path.abspath(__file__)
    mine = [f for f in frames if os.path.abspath(f.filename) != me and not f.filename.startswith("<frozen")][-limit:]
    where = "; ".join("line %d in %s" % (f.lineno, f.name) for f in mine)
    return "%s: %s" % (type(exc).__name__, str(exc)[:300]) + (" (%s)" % where if where else "")


def handle(sim_box, req, out):
    op = req.get("op")
    if op == "load":
        sim = Sim.__new__(Sim)
        sim.stage = "import"
        try:
            sim.__init__(req)
        except BaseException as exc:  # noqa: BLE001 - import/init of the code under test, SystemExit too
            return {"ok": False, "stage": sim.stage, "error": _error(exc), "output": out.tail[-500:]}
        sim_box[0] = sim
        obj, gstate = sim.copy(sim.root)
        try:
            f = sim.fp(obj, gstate)
        except BaseException as exc:  # noqa: BLE001 - a property of the code under test raised
            return {"ok": False, "stage": "init", "error": _error(exc), "output": out.tail[-500:]}
        sim.seen.add(f)
        return {"ok": True, "id": sim.root, "fp": f, "done": sim.flag(obj, sim.done_name),
                "won": sim.flag(obj, sim.won_name), "observation": sim.observation(obj)}
    sim = sim_box[0]
    if sim is None:
        return {"ok": False, "error": "no simulator loaded"}
    if op == "has":
        return {"ok": True, "has": {n: callable(getattr(sim.cls, n, None)) for n in req["names"]}}
    if op == "stats":
        return {"ok": True, "nodes": len(sim.nodes), "seen": len(sim.seen)}
    if op == "drop":
        for i in req["ids"]:
            sim.nodes.pop(i, None)
        return {"ok": True}
    if op == "fingerprint":
        obj, gstate = sim.copy(req["id"])
        return {"ok": True, "fp": sim.fp(obj, gstate)}
    if op == "call":
        # zero-argument methods called in turn on one copy of the node; stops at the first that raises
        obj, gstate = sim.copy(req["id"])
        random.setstate(gstate)
        values = []
        for m in req["methods"]:
            try:
                values.append(repr(getattr(obj, m)())[:400])
            except BaseException as exc:  # noqa: BLE001
                return {"ok": False, "method": m, "error": _error(exc), "values": values}
        return {"ok": True, "values": values}
    if op == "actions":
        try:
            if req.get("inplace"):
                obj, gstate = sim.live(req["id"])
            else:
                obj, gstate = sim.copy(req["id"])
            random.setstate(gstate)
            acts = sim.listed(obj)
            if req.get("inplace"):
                sim.nodes[req["id"]] = (sim.snapshot(obj), random.getstate())
            return {"ok": True, "actions": acts}
        except BaseException as exc:  # noqa: BLE001
            return {"ok": False, "error": _error(exc)}
    if op == "children":
        i = req["id"]
        store = bool(req.get("store", True))
        dedupe = bool(req.get("dedupe", True))
        leaf = bool(req.get("leaf", False))
        blank = dict(req.get("blank", {}))
        refresh = bool(req.get("refresh", sim.refresh))
        rows = []
        for a in req["actions"]:
            try:
                obj, gstate = sim.step_from(i, a, refresh)
            except BaseException as exc:  # noqa: BLE001 - the code under test
                rows.append({"action": a, "error": _error(exc)})
                continue
            try:
                if leaf:  # only whether the step raised and how the game stands
                    rows.append({"action": a, "done": sim.flag(obj, sim.done_name),
                                 "won": sim.flag(obj, sim.won_name)})
                    continue
                for name, value in blank.items():  # attributes the caller proved dead: one value for all
                    if name in getattr(obj, "__dict__", {}):
                        setattr(obj, name, value)
                snap = sim.snapshot(obj) if sim.fp_mode == "pickle" else None
                f = sim.fp(obj, gstate, snap)
                row = {"action": a, "fp": f, "done": sim.flag(obj, sim.done_name),
                       "won": sim.flag(obj, sim.won_name), "observation": sim.observation(obj)}
            except BaseException as exc:  # noqa: BLE001 - a property of the code under test raised
                rows.append({"action": a, "error": _error(exc), "flag_error": True})
                continue
            if store and (not dedupe or f not in sim.seen):
                sim.seen.add(f)
                row["id"] = sim.store(obj, gstate, snap)
            rows.append(row)
        return {"ok": True, "children": rows}
    if op == "replay":
        try:
            obj, gstate = sim.copy(sim.root)
            random.setstate(gstate)
            for a in req["path"]:
                if sim.refresh:
                    getattr(obj, sim.actions_name)()
                getattr(obj, sim.step_name)(a)
            gstate = random.getstate()
            i = sim.store(obj, gstate)
            return {"ok": True, "id": i, "fp": sim.fp(obj, gstate), "done": sim.flag(obj, sim.done_name),
                    "won": sim.flag(obj, sim.won_name)}
        except BaseException as exc:  # noqa: BLE001
            return {"ok": False, "error": _error(exc)}
    return {"ok": False, "error": "unknown request %r" % (op,)}


def main():
    _load_filter(sys.argv[1] if len(sys.argv) > 1 else "")
    proto_in = os.fdopen(os.dup(0), "rb", buffering=0)
    proto_out = os.fdopen(os.dup(1), "wb", buffering=0)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    out = _Capped()
    sys.stdout = out
    sys.stderr = out
    sys.stdin = io.StringIO("")
    sys.setrecursionlimit(20000)
    sim_box = [None]
    reader = io.BufferedReader(proto_in, 1 << 16)
    while True:
        line = reader.readline()
        if not line:
            return
        try:
            req = json.loads(line)
            reply = handle(sim_box, req, out)
        except MemoryError:
            reply = {"ok": False, "error": "MemoryError: the code used more memory than allowed"}
        except RecursionError:
            reply = {"ok": False, "error": "RecursionError"}
        except Exception as exc:  # noqa: BLE001 - a malformed request
            reply = {"ok": False, "error": "worker: " + _error(exc)}
        proto_out.write((json.dumps(reply, separators=(",", ":")) + "\n").encode("utf-8", "surrogatepass"))


if __name__ == "__main__":
    main()
