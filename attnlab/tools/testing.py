"""Tiny random BERT-family models for tests, exercises and offline demos.

They are built in code, saved with ``save_pretrained`` and reloaded like any
local model, so the whole loading path is exercised without a model hub.

* :func:`english_vocab` — a small word-piece vocabulary.
* :func:`chinese_vocab` — a character-level vocabulary shaped like
  ``bert-base-chinese`` (special tokens, then one entry per character).
* :func:`save_tiny_model` — a random model of a given architecture, 12 heads
  by default (like ``bert-base-chinese``) with a small hidden size.
* :func:`save_bert_chinese_like` — a small random model saved with
  ``bert-base-chinese``'s tokenizer layout and its pre-training heads.
* :func:`save_bert_base_chinese_shaped` — a random model with ``bert-base-chinese``'s
  full shape (12 x 12, hidden 768, 21,128 entries), for timing and for heads that attend evenly.
* :class:`StandInHub` — a local stand-in for the model hub (``HF_ENDPOINT``),
  which can also refuse to answer, answer with errors or cut a download off.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import torch

from attnlab.core.models import quiet_transformers

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]

_EN_WORDS = (
    "how do you play chess the a an is are what why where when who can i we to of in on for "
    "with and or not this that it game games best way learn rules move moves piece pieces board "
    "king queen win lose start good bad new old big small fast slow make get go see look find "
    "use work time day night people music song book movie phone water food city home school "
    "teacher student question answer head heads attention model word words token tokens layer"
).split()
_EN_PIECES = ["##s", "##ing", "##ed", "##er", "##ly", "##tion", "##a", "##e", "##i", "##o", "##n", "##t"]
_EN_CHARS = list("abcdefghijklmnopqrstuvwxyz0123456789") + [".", ",", "?", "!", "'", "-"]

# Common characters of search-style Chinese queries; the example query's first.
_ZH_CHARS = (
    "王者荣耀怎么玩手机游戏好看电影音乐推荐今天天气如何做菜的是在了不和有大小人我你他这那个"
    "什为吗呢吧去来上下中国北京上海学习英语数学考试工作哪里最新免费下载视频小说歌曲图片价格多少"
    "钱买卖车房子医院感冒发烧吃药减肥运动健身跑步篮球足球比赛直播新闻体育明星旅游攻略酒店机票"
    "火车时间地址电话号码怎样才能可以如果因为所以但是还是或者已经正在一二三四五六七八九十年月日"
    "春夏秋冬早晚饭水果蔬菜米面包牛奶咖啡茶猫狗鸟鱼花树山河海风雨雪电脑软件系统网络密码账号"
)


def english_vocab() -> list[str]:
    """A small English word-piece vocabulary (special tokens first)."""
    return SPECIALS + _EN_WORDS + _EN_PIECES + _EN_CHARS + ["##" + c for c in "abcdefghijklmnopqrstuvwxyz"]


def chinese_vocab() -> list[str]:
    """A character-level Chinese vocabulary laid out like ``bert-base-chinese``."""
    seen: list[str] = []
    for ch in _ZH_CHARS:
        if ch not in seen:
            seen.append(ch)
    return SPECIALS + list("0123456789?!,.") + ["，", "。", "？", "！"] + seen


def _config(arch: str, vocab_size: int, n_layers: int, n_heads: int, hidden: int, max_positions: int):
    from transformers import AlbertConfig, BertConfig, DistilBertConfig, ElectraConfig, RobertaConfig

    common = dict(vocab_size=vocab_size, pad_token_id=0)
    if arch == "bert":
        return BertConfig(hidden_size=hidden, num_attention_heads=n_heads, num_hidden_layers=n_layers,
                          intermediate_size=2 * hidden, max_position_embeddings=max_positions, **common)
    if arch == "roberta":
        return RobertaConfig(hidden_size=hidden, num_attention_heads=n_heads, num_hidden_layers=n_layers,
                             intermediate_size=2 * hidden, max_position_embeddings=max_positions + 2,
                             type_vocab_size=1, bos_token_id=2, eos_token_id=3, **common)
    if arch == "distilbert":
        return DistilBertConfig(dim=hidden, n_heads=n_heads, n_layers=n_layers, hidden_dim=2 * hidden,
                                max_position_embeddings=max_positions, **common)
    if arch == "albert":
        return AlbertConfig(embedding_size=16, hidden_size=hidden, num_attention_heads=n_heads,
                            num_hidden_layers=n_layers, intermediate_size=2 * hidden,
                            max_position_embeddings=max_positions, **common)
    if arch == "electra":
        return ElectraConfig(embedding_size=16, hidden_size=hidden, num_attention_heads=n_heads,
                             num_hidden_layers=n_layers, intermediate_size=2 * hidden,
                             max_position_embeddings=max_positions, **common)
    raise ValueError(f"unknown architecture {arch!r}: use bert, roberta, distilbert, albert or electra")


ARCHITECTURES = ("bert", "roberta", "distilbert", "albert", "electra")


def save_tiny_model(
    path: str | Path,
    *,
    arch: str = "bert",
    language: str = "en",
    n_layers: int = 2,
    n_heads: int = 12,
    hidden: int = 48,
    max_positions: int = 64,
    seed: int = 0,
    mlm_head: bool = False,
) -> Path:
    """Build a random model and its tokenizer and save both to ``path``.

    Args:
        arch: ``bert``, ``roberta``, ``distilbert``, ``albert`` or ``electra``.
        language: ``"en"`` (word pieces) or ``"zh"`` (one token per character).
        n_heads: 12 by default, like ``bert-base-chinese``; ``hidden`` must be
            divisible by it.
        mlm_head: save a masked-language-model head too (``...ForMaskedLM``).

    Returns:
        The folder, ready for ``attnlab.load_model(path)``.
    """
    from transformers import AutoModel, AutoModelForMaskedLM, BertTokenizer

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    vocab = chinese_vocab() if language == "zh" else english_vocab()
    tokenizer = BertTokenizer(
        vocab={tok: i for i, tok in enumerate(vocab)},
        do_lower_case=True,
        tokenize_chinese_chars=True,
        model_max_length=max_positions,
    )
    cfg = _config(arch, len(vocab), n_layers, n_heads, hidden, max_positions)
    torch.manual_seed(seed)
    factory = AutoModelForMaskedLM if mlm_head else AutoModel
    model = factory.from_config(cfg)
    with quiet_transformers():
        model.save_pretrained(path)
        tokenizer.save_pretrained(path)
    return path


# --------------------------------------------------------------------------- a bert-base-chinese stand-in

#: the special tokens at the ids bert-base-chinese gives them ([PAD] 0, [UNK] 100, [CLS] 101, ...)
_BBC_HEAD = ["[PAD]"] + [f"[unused{i}]" for i in range(1, 100)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def bert_chinese_vocab(texts: list[str] | tuple[str, ...] = ()) -> list[str]:
    """A vocabulary laid out like ``bert-base-chinese``'s: special tokens at the same ids,
    ASCII marks, digits and letters, then one entry per Chinese character (those of
    :func:`chinese_vocab` and of ``texts``), then their ``##`` continuation pieces."""
    ascii_part = [c for c in "!\"#$%&'()*+,-./0123456789:;<=>?@[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~"]
    chars: list[str] = []
    for ch in "，。？！、：；“”（）" + _ZH_CHARS + "".join(texts):
        if ch.strip() and ch not in chars and ch not in ascii_part and not ch.isascii():
            chars.append(ch)
    return _BBC_HEAD + ascii_part + chars + ["##" + c for c in chars]


def save_bert_chinese_like(
    path: str | Path,
    *,
    texts: list[str] | tuple[str, ...] = (),
    n_layers: int = 2,
    n_heads: int = 12,
    hidden: int = 48,
    max_positions: int = 128,
    seed: int = 0,
) -> Path:
    """A random model with ``bert-base-chinese``'s layout, saved like the real checkpoint.

    Character pieces, ``[CLS]``/``[SEP]`` at ids 101/102, a vocabulary built
    from ``texts`` (:func:`bert_chinese_vocab`), a BERT with its pre-training heads
    (so the saved weights hold ``cls.*`` keys the bare encoder does not use,
    as in the real checkpoint). Small by default (2 layers x 12 heads).

    Returns:
        The folder, ready for ``attnlab.load_model(path)`` or for :class:`StandInHub`.
    """
    from transformers import BertConfig, BertTokenizer

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    vocab = bert_chinese_vocab(texts)
    tokenizer = BertTokenizer(vocab={tok: i for i, tok in enumerate(vocab)}, do_lower_case=True,
                              tokenize_chinese_chars=True, model_max_length=max_positions)
    cfg = BertConfig(vocab_size=len(vocab), hidden_size=hidden, num_attention_heads=n_heads,
                     num_hidden_layers=n_layers, intermediate_size=2 * hidden,
                     max_position_embeddings=max_positions, pad_token_id=0,
                     architectures=["BertForMaskedLM"])
    return _save_bert(path, cfg, tokenizer, vocab, seed)


def _save_bert(path: Path, cfg, tokenizer, vocab: list[str], seed: int) -> Path:
    """Save a randomly initialised ``BertForPreTraining`` of ``cfg`` with its tokenizer and vocab.txt."""
    from transformers import BertForPreTraining

    torch.manual_seed(seed)
    model = BertForPreTraining(cfg)  # encoder with pooler, plus the cls.* pre-training heads
    with quiet_transformers():
        model.save_pretrained(path)
        tokenizer.save_pretrained(path)
    (path / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")  # as the real repository has
    return path


#: the shape of bert-base-chinese's config.json
BERT_BASE_CHINESE_SHAPE = {"vocab_size": 21_128, "hidden_size": 768, "num_hidden_layers": 12,
                           "num_attention_heads": 12, "intermediate_size": 3072, "max_position_embeddings": 512,
                           "type_vocab_size": 2}


def bert_base_chinese_vocab(size: int = BERT_BASE_CHINESE_SHAPE["vocab_size"]) -> list[str]:
    """A ``size``-entry vocabulary laid out like ``bert-base-chinese``'s, built offline.

    The special tokens at the real ids ([PAD] 0, [UNK] 100, [CLS] 101, [SEP] 102,
    [MASK] 103), ASCII marks, digits and letters, Chinese punctuation, then one
    entry per CJK character from U+4E00 on (so almost every character of a
    Chinese query is one known piece, as in the real vocabulary), then ``##``
    continuation pieces of those characters until ``size`` entries.
    """
    base = bert_chinese_vocab()
    head = base[: base.index("，")]  # special tokens and ASCII
    punctuation = [c for c in "，。？！、：；“”（）《》…—·" if c not in head]
    chars = [chr(code) for code in range(0x4E00, 0x9FA6)]
    vocab = head + punctuation + chars
    vocab = vocab[:size]
    pieces = iter("##" + c for c in chars)
    while len(vocab) < size:
        vocab.append(next(pieces))
    return vocab


def save_bert_base_chinese_shaped(path: str | Path, *, seed: int = 0) -> Path:
    """A randomly initialised model with ``bert-base-chinese``'s full shape, saved like the real checkpoint.

    12 layers x 12 heads, hidden 768, feed-forward 3072, 512 positions, a
    21,128-entry character vocabulary (:func:`bert_base_chinese_vocab`), the
    pre-training heads (``cls.*`` keys, so the masked-LM head loads too), random
    weights (transformers' initialisation, std 0.02): every head attends almost
    evenly, so fixedness is undefined (NaN) for such heads by design. Speed does
    not depend on the weights, so it times the course on the article's model
    without downloading it. About 410 MB on disk (fp32 safetensors); built in
    about 10 s.

    Returns:
        The folder, ready for ``attnlab.load_model(path)`` or ``ATTNLAB_MODEL=path``.
    """
    from transformers import BertConfig, BertTokenizer

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    vocab = bert_base_chinese_vocab()
    shape = BERT_BASE_CHINESE_SHAPE
    tokenizer = BertTokenizer(vocab={tok: i for i, tok in enumerate(vocab)}, do_lower_case=True,
                              tokenize_chinese_chars=True, model_max_length=shape["max_position_embeddings"])
    cfg = BertConfig(**shape, pad_token_id=0, architectures=["BertForMaskedLM"])
    return _save_bert(path, cfg, tokenizer, vocab, seed)


class StandInHub:
    """A local stand-in for the model hub, for tests: ``HF_ENDPOINT=hub.url``.

    Serves the files of one model folder under ``repo_id`` on 127.0.0.1 (an
    unused port), in a thread. ``mode`` says how it behaves:

    ``"serve"``   answers like the hub (HEAD/GET ``/{repo}/resolve/{rev}/{file}``,
                  ``/api/models/{repo}/revision/{rev}``), with ``Range`` requests;
    ``"silent"``  accepts every connection and never answers;
    ``"503"``     answers every request with HTTP 503;
    ``"404"``     answers every request with 404 (no such model);
    ``"cut"``     answers like ``serve`` but closes the connection halfway through the weights.

    ``connections`` counts the connections accepted; ``requests`` lists
    ``(method, path, range header)``. Use as a context manager.
    """

    COMMIT = "0123456789abcdef0123456789abcdef01234567"

    def __init__(self, repo_id: str, folder: str | Path | None = None, mode: str = "serve") -> None:
        if mode not in ("serve", "silent", "503", "404", "cut"):
            raise ValueError(f"unknown mode {mode!r}")
        self.repo_id, self.mode = repo_id, mode
        self.files: dict[str, bytes] = {}
        if folder is not None:
            self.files = {p.name: p.read_bytes() for p in sorted(Path(folder).iterdir()) if p.is_file()}
        self.etags = {name: hashlib.sha256(data).hexdigest() for name, data in self.files.items()}
        self.connections = 0
        self.requests: list[tuple[str, str, str]] = []
        self.release = threading.Event()
        hub = self

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def process_request(self, request, client_address):  # noqa: ANN001 - stdlib signature
                hub.connections += 1
                super().process_request(request, client_address)

        self._server = Server(("127.0.0.1", 0), _standin_handler(self))
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> "StandInHub":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()


def _standin_handler(hub: StandInHub):
    """The request handler class of a :class:`StandInHub`."""
    resolve = re.compile(r"^/(?P<repo>.+?)/resolve/(?P<rev>[^/]+)/(?P<file>[^?]+)")
    info = re.compile(r"^/api/models/(?P<repo>.+?)/revision/(?P<rev>[^/?]+)")

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:  # quiet
            pass

        def _answer(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _handle(self) -> None:
            hub.requests.append((self.command, self.path, self.headers.get("Range", "")))
            if hub.mode == "silent":
                hub.release.wait(120)
                self.close_connection = True
                return
            if hub.mode == "503":
                return self._answer(503, b"Service Unavailable")
            if hub.mode == "404":
                return self._answer(404, b"Repository not found", {"X-Error-Code": "RepoNotFound"})
            found = info.match(self.path)
            if found and found["repo"] == hub.repo_id:
                body = json.dumps({"id": hub.repo_id, "modelId": hub.repo_id, "sha": hub.COMMIT, "private": False,
                                   "siblings": [{"rfilename": name} for name in hub.files]}).encode()
                return self._answer(200, body, {"Content-Type": "application/json"})
            found = resolve.match(self.path)
            if not found or found["repo"] != hub.repo_id:
                return self._answer(404, b"Repository not found", {"X-Error-Code": "RepoNotFound"})
            name = found["file"]
            if name not in hub.files:
                return self._answer(404, b"Entry not found", {"X-Error-Code": "EntryNotFound"})
            self._send_file(name)

        def _send_file(self, name: str) -> None:
            data = hub.files[name]
            start = 0
            wanted = re.match(r"bytes=(\d+)-", self.headers.get("Range", ""))
            if wanted and self.command == "GET":
                start = min(int(wanted.group(1)), len(data))
            headers = {"X-Repo-Commit": hub.COMMIT, "ETag": f'"{hub.etags[name]}"', "Accept-Ranges": "bytes"}
            self.send_response(206 if start else 200)
            for key, value in headers.items():
                self.send_header(key, value)
            if start:
                self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            self.send_header("Content-Length", str(len(data) - start))
            self.end_headers()
            if self.command == "HEAD":
                return
            body = data[start:]
            if hub.mode == "cut" and name.endswith(".safetensors"):
                self.wfile.write(body[: len(body) // 2])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(2)
                return
            self.wfile.write(body)

        do_GET = do_HEAD = _handle

    return Handler
