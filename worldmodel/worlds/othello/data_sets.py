"""The Othello world's data set: ``wthor`` (``worldmodel fetch wthor``).

The Fédération Française d'Othello's WTHOR database, one file per year (1977–2025) plus the player
and tournament lists, from ffothello.org; when the FFO has published a newer release than the one
pinned here (its files then fail the checksum), the pinned copy in borassi/othello-sensei is used
instead.
"""

from __future__ import annotations

from ...datasets import DataSet, Remote


FFO_BASE = "https://www.ffothello.org/wthor/base"
SENSEI_BASE = ("https://raw.githubusercontent.com/borassi/othello-sensei/"
               "07818a00a30b86eab610d4265984e7ff43de77c9/assets/archive/Thor")
WTHOR_FILES = (  # (name, sha256, bytes): the FFO release of 2026-02, as archived by othello-sensei
    ("WTH.JOU", "3db81a3850ab4bb1ff4523f2d326fccbc4168ae68865ec4fcc45b884bdde56c9", 88976),
    ("WTH.TRN", "eb0e261c958fc0aa3bdd0aca887e989f1bdf3cad7e64e49ff18cdf7c3327b333", 12808),
    ("WTH_1977.wtb", "9c44b6bf9dca9c9226252a99678d298cec7ae26a39368fdfff207e61ab3cef94", 832),
    ("WTH_1978.wtb", "46e1ecef62dc7e7e5d6dd315aa6de9d9e4147b19cc94bf4a45ef10e8dc22499d", 560),
    ("WTH_1979.wtb", "b210e8334d49b8c29cd5e6671efa3283c03f320019df1bd07db7c915b8e40546", 764),
    ("WTH_1980.wtb", "38a6f4a121883621e11ac5ea9943c5342bc18bbf9c7ea3ef72fb2a9717343331", 10896),
    ("WTH_1981.wtb", "ed654368797faf50e005e07b3c457d34ba6a06833fd52a1f186aa07bf74f82c9", 10420),
    ("WTH_1982.wtb", "a9f113b77034584184f103ead32030097739eb30600a6c6bf1d4cbc040429e29", 7496),
    ("WTH_1983.wtb", "a962233829c420d78a133aecfab466ad2da456b87db98c8a62087446540d16a6", 13548),
    ("WTH_1984.wtb", "c4f848c5a5e99e6a80be0e29af541958914a25e0515f51184d48ade9aa03546d", 39932),
    ("WTH_1985.wtb", "cff42294d01eec1784a194dbb5af250b302bf6a725f0158f4d99282fc58f4722", 64888),
    ("WTH_1986.wtb", "ccaff79b4e6f86dc6f4b917178b0ef01784aba4c39500143f87b0c70af0ac299", 97936),
    ("WTH_1987.wtb", "9410c7a166248de66649ae80f9da67f4ef2cbc520956d3117d56848747813156", 94264),
    ("WTH_1988.wtb", "8e70a6f6c2e79ed60af3c593505d5b87e8b81d16f87f0788e9ddcab755430b15", 123980),
    ("WTH_1989.wtb", "459d9c22674ee5033f38249c20260eba9b4773e4ac9caaeab4fbd2f974729539", 148664),
    ("WTH_1990.wtb", "8100ff898e9c1c13d44dd6cfbfd78d8753cda731e1dc4db05cb31add10f8e209", 203064),
    ("WTH_1991.wtb", "246cb916d0af1d229e541ccb2cafff7e64d5d0174f191b4d3ace564642260206", 214352),
    ("WTH_1992.wtb", "44f9c95612fdbe75a285a51e66dbb83712f7f1b5822910fb41b5b5a6434d3872", 227612),
    ("WTH_1993.wtb", "2fdba7cbc3d771b6d23be3889445c7580c36c05745916d9f9049c33ea65f023b", 236928),
    ("WTH_1994.wtb", "5bdb8b6c394ff0f85952256d88015b3dfcda59939e2be48af05d6889f42dedb2", 295340),
    ("WTH_1995.wtb", "77102226943bd869233b9a9c58e70f83b3308170a9c2d10abece64a68a64a9d7", 337840),
    ("WTH_1996.wtb", "cf10aae185db77c6e1089a56351d6ce7436f4e5fc910b5e71f03c712859258b7", 397952),
    ("WTH_1997.wtb", "4b0b9f403e2a1bb1c9ba0ed02c1c39cea0127db056fcdfc6c4c6ce74baf5eb50", 522324),
    ("WTH_1998.wtb", "a5d39409c5e3a84519fa0c2a84f368cb97ce63be4964ef1321be9381976aae5a", 549252),
    ("WTH_1999.wtb", "e78208e66ff6b2dca9c37754c1a840cd177c53d8691926d35e75b6cce5b37a4f", 522596),
    ("WTH_2000.wtb", "f70faa94377a6f8b67792da6ac0e905593712352d8b26ac064da54506dd53944", 289220),
    ("WTH_2001.wtb", "21920f4776d810126ee1b68c99541f8ac389cf98055c19cb5fa815ed95b846dd", 379116),
    ("WTH_2002.wtb", "fe36942863354622a6cc307e73307202348c262c5e49a99371d4743284218852", 368780),
    ("WTH_2003.wtb", "57bcab596cc10e7668c898642094219213c0d3293d7e2180852e0c4ac9c6a95c", 262360),
    ("WTH_2004.wtb", "90e5dc4f4cd37a5e02f3833e9b82128a330534f8afd22e780011748f1683cc97", 619700),
    ("WTH_2005.wtb", "a2793df2b806f2933a16c8c615de7192f0d778f8c8ed9683a1a8790f417013dc", 285548),
    ("WTH_2006.wtb", "596504fe8435acd73d479bf570ae3fb8d033796db5b3f2ef3c61bde9492b1955", 200072),
    ("WTH_2007.wtb", "a29e8a1d26913bc704ddb7d7a8a0ee01a8b9def101428cd661411cd1da39e4fc", 168520),
    ("WTH_2008.wtb", "9e4b4501a8c48e464148409d7f3583220ed1426f75f50a0420333fe471056701", 151792),
    ("WTH_2009.wtb", "a25036acbbe03ccaa0236445d5176174040d57f7b9941d21979013bd616a6112", 295680),
    ("WTH_2010.wtb", "b7fdbcb1d64c08cc012792404fe297b07f9e0eac8cd73d2afab48303d4d92a91", 147712),
    ("WTH_2011.wtb", "ebea481ed09095247b107abf8e348b79bb398ced5c0854166027a6abeeff2030", 128604),
    ("WTH_2012.wtb", "a92d7b251986dabde2aa6774456a6dcb3785e9e0db7a2b11094aa49bf903e611", 150160),
    ("WTH_2013.wtb", "f71f1981b6519b7bcc768f832f6c25e3bb9d2b896dc5375a6b681fc1ddad8f2d", 162944),
    ("WTH_2014.wtb", "45728d4de4f2b1a40a83bdd46fcffe48e21c85aa4e786f2c6aec6fe6db8bd230", 123572),
    ("WTH_2015.wtb", "7fac0f0a4fb2734a7ac6d98f85a9d6969e02250b8a61f46bbebcfe11cacff59e", 130984),
    ("WTH_2016.wtb", "afaccc1ab00502da45416010621566d808ca8d00de09232b196dc3e3451af446", 136900),
    ("WTH_2017.wtb", "854ce8189596c87846d78ee151776ef74dcdc8972bf02eac6f4d8e60f5308c18", 166548),
    ("WTH_2018.wtb", "db9e475aa33cbbd68f9a1231421656b6c9f4939cccec386f1761e2d19661edf4", 165188),
    ("WTH_2019.wtb", "5907d39469ef7a67846c59e50f4368fcd0458bb4bf9802a7d6050dca2c71bf1f", 134860),
    ("WTH_2020.wtb", "2987c5a149ff88a6087c863a065d54d0c0d586255b41cfd06976495a173ac573", 60944),
    ("WTH_2021.wtb", "f7c2672aaae2badeb1c21bccfc7e4936a11277c68fcb9775f6c7375872f22208", 46256),
    ("WTH_2022.wtb", "f48859be434a916be20e7dacc5a403acaaf6ba9ee0c2ca6129446e001d84f72a", 93448),
    ("WTH_2023.wtb", "eb4988e1f34d44c1d8ae82aea620422d7b9762a51eb12fd07ad79fb23b0a54ea", 168520),
    ("WTH_2024.wtb", "cfb0a86eac305d3de8399a600de99241bd0f0ddceb9431381c70a471281494fb", 196604),
    ("WTH_2025.wtb", "dfdb85456431e59122336a03fe384b037436ac5f3f0c3b6e5462870635c9483d", 198576),
)


def _ffo_name(name: str) -> str:
    return {"WTH.JOU": "WTHOR.JOU", "WTH.TRN": "WTHOR.TRN"}.get(name, name)


WTHOR = DataSet(
    name="wthor",
    folder="othello",
    description="the WTHOR database of Othello games, 1977-2025 (137,548 games, 9.5 MB)",
    files={name: sha for name, sha, _ in WTHOR_FILES},
    remotes=tuple(Remote(name, sha, size, (f"{FFO_BASE}/{_ffo_name(name)}", f"{SENSEI_BASE}/{name}"))
                  for name, sha, size in WTHOR_FILES),
    licence="Fédération Française d'Othello (WTHOR database), free public download; credit the FFO",
)


DATA_SETS = (WTHOR,)
