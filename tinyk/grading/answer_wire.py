"""The wire between the verdict and the learner's answers (course: the instructors' page, grading).

Frames on both pipes: an 8-byte length, then the payload. Requests are pickles (they come
from the grader); replies are ``torch.save`` payloads (read back with ``weights_only``), made
by :func:`reply`. The markers below tag what a request's arguments hold, and :func:`rebuild`
is the one walk over those arguments, on both sides (made ready to send, put back on
arrival). Used on both sides:
:mod:`tinyk.grading.learner_process` (the learner's process) and :mod:`tinyk.grading.answer_server`,
:mod:`tinyk.grading.proxies` (the grader's).

A reply comes from the student's process, so the grader reads it within bounds, each
checked before what it bounds is held: the frame's length header before its payload
(:data:`FRAME_LIMIT`), the payload's form and its pickle's size before it is unpickled
(:data:`PICKLE_LIMIT`), and the tensors' sizes once rebuilt (:func:`load_reply`), when each
is a view of the frame's bytes and nothing larger exists yet: the elements a tensor stands
for, whatever its strides (:data:`TENSOR_LIMIT`: ``torch.zeros(1).expand(2**40)`` is four
bytes of storage and four tebibytes once anything touches it), and the items and nesting of
its lists and dicts (:data:`ITEM_LIMIT`, :data:`DEPTH_LIMIT`). Past any of them,
:exc:`TooLarge` names the size and the bound.

One walker, :func:`walk`, goes over every tree that crosses, each caller with its own
visit and its own bound (past it, the caller's own exception):

- :func:`check_reply` (the grader's side) walks what ``torch.load`` gave (a forged pickle
  never gets that far: ``weights_only``), whatever its tags, and counts every value, level
  and tensor byte within :data:`DEPTH_LIMIT` levels. It runs to the end before anything is
  decoded: a count made while decoding would already have made parameters and
  :class:`~tinyk.grading.proxies.Remote` objects of a reply it then refuses. It rebuilds
  nothing, and it reads lists, tuples, dicts and sets alike: it cannot trust a tag to say what
  a node holds.
- :func:`tinyk.grading.proxies.decode` (the grader's side) reads the tagged format of a tree
  :func:`check_reply` has bounded already, so its work is at most :data:`ITEM_LIMIT` values;
  it checks each tag's fields for their exact types (no tensor or ``float`` subclass, no
  object that lies about equality crosses) and refuses more than :data:`DECODE_DEPTH` tagged
  levels.
- :meth:`tinyk.grading.learner_objects.Objects.encode` (the learner's side, in the sandbox)
  writes the tagged format from the learner's objects, turning anything that is not plain data
  into a handle; it refuses more than :data:`ENCODE_DEPTH` levels, so that an honest reply,
  two levels per tagged value plus the reply's own, stays within :data:`DEPTH_LIMIT` and within
  :data:`DECODE_DEPTH`. Its width is bounded on arrival (:data:`FRAME_LIMIT`, :data:`ITEM_LIMIT`).
- :func:`rebuild` (both sides) goes over a request's arguments within :data:`ARGS_DEPTH` levels.

The walker holds the depth and its bound; each visit says what a node is and which nodes
inside it to go down into. The walk recurses, but never deeper than its bound. The
encoder/decoder pair is tested round trip, and each bound at its edge, in
``tests/test_answer_objects.py`` and ``tests/test_verdict.py``.
"""

from __future__ import annotations

import io
import struct
import zipfile
from collections.abc import Callable, Sequence
from typing import Any, BinaryIO

__all__ = ["ARGS_DEPTH", "ARG", "CALLBACK", "DECODE_DEPTH", "DEPTH_LIMIT", "Down", "ENCODE_DEPTH",
           "FRAME_LIMIT", "ITEM_LIMIT", "PICKLE_LIMIT", "REF", "TENSOR_LIMIT", "TooLarge", "check_reply",
           "error", "load_reply", "marked", "read_frame", "rebuild", "reply", "walk", "write_frame"]

REF = "\x00ref"  # a request's reference to a handle: (REF, id)
ARG = "\x00arg"  # a tensor argument that needs its gradient: (ARG, index)
CALLBACK = "\x00cb"  # a function of the test's, which runs on the grader's side: (CALLBACK, id)
ARGS_DEPTH = 30  # lists, tuples and dicts inside one another in a request's arguments
_MARKERS = frozenset({REF, ARG, CALLBACK})


def marked(value: Any, tag: str) -> bool:
    """Whether ``value`` is a marker pair ``(tag, n)`` (``tag``: :data:`REF`, :data:`ARG` or
    :data:`CALLBACK`)."""
    return type(value) is tuple and len(value) == 2 and type(value[0]) is str and value[0] == tag


Down = Callable[[Any], Any]  # down(child): the child's visit, one level deeper (see walk)


def walk(tree: Any, visit: Callable[[Any, Down], Any], limit: int,
         too_deep: Callable[[int], BaseException]) -> Any:
    """The one walk over a tree that crosses the wire (a reply, a request's arguments):
    ``visit(tree, down)``, where the visit calls ``down(child)`` for each node inside that it
    goes into, which visits that child in turn, with a ``down`` of its own level; a node deeper
    than ``limit`` levels below the top raises ``too_deep(its depth)`` before it is visited.
    Recursive, but never past ``limit`` levels. Each caller's visit and bound: this module's
    docstring."""

    def level(depth: int) -> Down:
        """The ``down`` that visits a child at ``depth`` (made once a level, when first used)."""
        if depth > limit:
            def refuse(child: Any) -> Any:
                raise too_deep(depth)
            return refuse
        below: Down | None = None

        def down(child: Any) -> Any:
            nonlocal below
            if below is None:
                below = level(depth + 1)
            return visit(child, below)
        return down

    return visit(tree, level(1))


def rebuild(value: Any, leaf: Callable[[Any], Any]) -> Any:
    """``value`` with its lists, tuples and dicts rebuilt, each of its own type (a dict's keys
    as they are), and every other value, a marker pair included, replaced by ``leaf(value)``:
    the one walk over a request's arguments, whichever way they go (:mod:`tinyk.grading.proxies`
    makes them ready to send, :mod:`tinyk.grading.learner_objects` puts the learner's objects and the
    tensors back). ``ValueError`` past :data:`ARGS_DEPTH` levels."""

    def visit(node: Any, down: Down) -> Any:
        is_marker = type(node) is tuple and len(node) == 2 and type(node[0]) is str and node[0] in _MARKERS
        if type(node) in (list, tuple) and not is_marker:
            return type(node)([down(v) for v in node])
        if type(node) is dict:
            return {k: down(v) for k, v in node.items()}
        return leaf(node)

    return walk(value, visit, ARGS_DEPTH, _args_too_deep)


def _args_too_deep(depth: int) -> ValueError:
    return ValueError(f"arguments nested more than {ARGS_DEPTH} levels deep")


# The bounds on one reply of the learner's process, each ten times or more the course's largest
# legitimate one, measured over every exercise's solution (every chapter notebook's solutions
# judged by tinyk.grading.verdict, whose test cells fetch the names they read with one "names" reply):
# the capstone's SmolLM2 logits (05.10, 45 positions of a 49152-token vocabulary in float32)
# were the largest frame, 8,849,001 bytes, and the most tensor bytes, 8,847,360; the largest
# pickle held 761 bytes and the most values in one reply were 170, both in 05.10's run; with
# the cells' outputs asked for too (feedback's "outputs" replies), the largest are the same.
FRAME_LIMIT = 128 * 2**20  # bytes of one frame, read from its length header before the payload: 15x
TENSOR_LIMIT = 128 * 2**20  # bytes of a reply's tensors once rebuilt, numel x element size summed: 15x
# bytes of a reply's pickle (its structure: every list, dict, number), some 30 bytes of the
# grader's memory for one of the pickle's at most: room for an honest list of 100,000 numbers
PICKLE_LIMIT = 4 * 2**20
ITEM_LIMIT = 1_000_000  # values in one reply: list and tuple items, dict keys and values, tensors
DEPTH_LIMIT = 64  # lists, tuples and dicts inside one another: a tagged value is two levels, and
# the learner's side sends 20 at most (tinyk.grading.learner_objects), 43 levels with the reply's own
ENCODE_DEPTH = 20  # levels of lists, tuples and dicts the learner's side encodes (Objects.encode)
DECODE_DEPTH = 30  # tagged levels the grader decodes (proxies.decode): room for every encoded one


class TooLarge(ValueError):
    """A reply past one of the bounds: ``what`` it was, its ``size`` and the ``limit``, in
    ``unit`` (bytes, values or levels)."""

    def __init__(self, what: str, size: int, limit: int, unit: str = "bytes") -> None:
        super().__init__(f"the answer's process sent {what}: {_amount(size, unit)}, over the grader's "
                         f"bound of {_amount(limit, unit)}")
        self.what, self.size, self.limit = what, size, limit


def _amount(n: int, unit: str) -> str:
    """``n`` of ``unit``, bytes in binary multiples as well past a mebibyte."""
    if unit != "bytes" or n < 2**20:
        return f"{n:,} {unit}"
    scale = next(p for p in (40, 30, 20) if n >= 2**p)
    return f"{n:,} bytes ({n / 2**scale:.1f} {dict([(40, 'TiB'), (30, 'GiB'), (20, 'MiB')])[scale]})"


def _read_exactly(stream: BinaryIO, size: int) -> bytes:
    parts, left = [], size
    while left:
        part = stream.read(left)
        if not part:
            break
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def read_frame(stream: BinaryIO, limit: int = 2**40) -> bytes | None:
    """One frame's payload, or None at the end of the stream; :exc:`TooLarge` when its header
    says more than ``limit`` bytes (the payload is left unread)."""
    head = _read_exactly(stream, 8)
    if len(head) < 8:
        return None
    (size,) = struct.unpack("<Q", head)
    if size > limit:
        raise TooLarge("a reply", size, limit)
    data = _read_exactly(stream, size)
    return data if len(data) == size else None


def write_frame(stream: BinaryIO, payload: bytes) -> None:
    stream.write(struct.pack("<Q", len(payload)) + payload)
    stream.flush()


def reply(out: BinaryIO, tree: tuple) -> None:
    """Send ``tree`` as one ``torch.save`` frame."""
    import torch

    buffer = io.BytesIO()
    torch.save(tree, buffer)
    write_frame(out, buffer.getvalue())


def load_reply(frame: bytes) -> Any:
    """A reply's frame as data (``torch.load`` with ``weights_only``), within the bounds above:
    a ``torch.save`` zip of stored (never compressed) entries whose pickle is at most
    :data:`PICKLE_LIMIT` bytes, checked before it is read; then :func:`check_reply` on what
    it holds, before anything else sees it. :exc:`TooLarge` past a bound, ``ValueError`` for
    a payload of another form."""
    import torch

    if not frame.startswith(b"PK\x03\x04"):  # torch.save's zip: the legacy form sizes storages itself
        raise ValueError("the answer's process sent a reply that is not a torch.save archive")
    try:
        entries = zipfile.ZipFile(io.BytesIO(frame)).infolist()
    except (zipfile.BadZipFile, ValueError) as err:
        raise ValueError(f"the answer's process sent a broken archive ({err})") from err
    for entry in entries:
        if entry.compress_type != zipfile.ZIP_STORED or entry.file_size > len(frame):
            raise ValueError(f"the answer's process sent a compressed entry ({entry.filename})")
        if entry.filename.endswith("/data.pkl") and entry.file_size > PICKLE_LIMIT:
            raise TooLarge("a reply's pickle", entry.file_size, PICKLE_LIMIT)
    tree = torch.load(io.BytesIO(frame), weights_only=True)
    check_reply(tree)
    return tree


def check_reply(tree: Any) -> None:
    """Raise :exc:`TooLarge` unless ``tree`` is within :data:`DEPTH_LIMIT` levels of lists,
    tuples and dicts, :data:`ITEM_LIMIT` values, and tensors of at most :data:`TENSOR_LIMIT`
    bytes in all once rebuilt (``numel x element_size``, whatever their strides: an expanded
    tensor counts every element it stands for); ``ValueError`` for a tensor that is not a
    dense one on the CPU. The walk goes down into lists, tuples, dicts and sets only, so the
    bound counts them alone; a tensor (and a parameter's gradient) is counted where it stands."""
    import torch

    items, tensor_bytes = 1, 0

    def count_tensor(node: Any) -> None:
        nonlocal items, tensor_bytes
        while isinstance(node, torch.Tensor):
            if node.layout != torch.strided or node.device.type != "cpu":
                raise ValueError(f"the answer's process sent a {node.layout} tensor on {node.device}, "
                                 f"not a dense one on the CPU")
            tensor_bytes += node.numel() * node.element_size()
            if tensor_bytes > TENSOR_LIMIT:
                raise TooLarge(f"tensors (the last of shape {tuple(node.shape)}, strides "
                               f"{node.stride()})", tensor_bytes, TENSOR_LIMIT)
            node = node.grad if isinstance(node, torch.nn.Parameter) else None
            items += node is not None
        if items > ITEM_LIMIT:
            raise TooLarge("a reply", items, ITEM_LIMIT, "values")

    def visit(node: Any, down: Down) -> None:
        nonlocal items
        children = _children(node)
        if children is None:
            count_tensor(node)
            return
        items += len(children)
        if items > ITEM_LIMIT:
            raise TooLarge("a reply", items, ITEM_LIMIT, "values")
        for child in children:
            if type(child) not in _LEAVES:
                if _children(child) is None:
                    count_tensor(child)
                else:
                    down(child)

    walk(tree, visit, DEPTH_LIMIT - 1, _reply_too_deep)  # depths 0 to 63: 64 levels


def _reply_too_deep(depth: int) -> TooLarge:
    return TooLarge("lists, tuples and dicts nested", depth + 1, DEPTH_LIMIT, "levels")


_LEAVES = frozenset({type(None), bool, int, float, complex, str, bytes})  # counted, nothing inside


def _children(node: Any) -> Sequence[Any] | None:
    """What ``node`` holds (a dict its keys and values), or None for a value that holds nothing."""
    if isinstance(node, list | tuple):
        return node
    if isinstance(node, set | frozenset):
        return list(node)
    if isinstance(node, dict):
        return [x for pair in node.items() for x in pair]
    return None


def error(exc: BaseException) -> tuple:
    """An exception as data: its class name (a builtin's, else its base's) and its message."""
    import builtins

    name = next((c.__name__ for c in type(exc).__mro__ if getattr(builtins, c.__name__, None) is c),
                "Exception")
    return ("err", name, f"{type(exc).__name__}: {exc}"[:2000])
