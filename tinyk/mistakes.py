"""The catalogue of classic mistakes in the chapter's exercises (course section "For instructors").

Each mistake has a stable id (``05.3.2:half-split-pairing``: the exercise, then a name), a
short label in English and in Chinese, and the words its visible test prints when an answer
makes it: a lowercase piece of the failing assert's message. A visible test runs first in
its graded cell, so the same message reaches the grader, which writes the id into the
``detail`` column of ``grades.csv`` (:func:`note`); the class report counts them
(:mod:`tinyk.class_report`). The course's tests hold, for every mistake, at least one wrong
answer that makes it, and check that its message names this mistake and no other.

Several wrong answers may make one mistake, when the visible test cannot tell them apart
(``tile`` and ``repeat`` give the same wrong grouping). Within an exercise the first mistake
whose words are in the message is the one named, so a specific message is listed before a
general one that it also contains.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["CATALOGUE", "Mistake", "by_id", "exercise_of", "match", "mistakes_in", "note", "of_exercise"]


@dataclass(frozen=True)
class Mistake:
    """One classic mistake: ``id`` (``05.N.k:name``), ``words`` (a lowercase piece of the
    visible test's message), ``en`` and ``zh`` (short labels)."""

    id: str
    words: str
    en: str
    zh: str

    @property
    def exercise(self) -> str:
        """The exercise's number, ``05.3.2``."""
        return self.id.split(":")[0]

    @property
    def grade_id(self) -> str:
        """The grade_id of the exercise's test cell, ``ex_05_3_2_test``."""
        return f"ex_{self.exercise.replace('.', '_')}_test"


_BORROWED = ("not allowed here", "calls a ready-made version (the course's or PyTorch's) instead of "
             "the learner's own code", "调用了现成的实现（课程的或 PyTorch 的），而不是自己写的代码")
_TILED = ("contiguous groups", "tiled heads [0, 1, 0, 1] (repeat, tile or the wrong axis) instead of "
          "contiguous groups [0, 0, 1, 1]", "头被平铺成 [0, 1, 0, 1]（repeat、tile 或复制了错误的轴），"
          "而不是连续分组 [0, 0, 1, 1]")

# (exercise, name, words, English, Chinese), each exercise's specific messages first.
_TABLE: list[tuple[str, str, str, str, str]] = [
    ("05.2.1", "eps-outside-sqrt", "inside the square root", "eps added outside the square root",
     "eps 加在了平方根之外"),
    ("05.2.1", "sum-not-mean", "mean of the squares", "the sum of the squares instead of their mean",
     "用了平方和，而不是平方的均值"),
    ("05.2.2", "subtracts-mean", "no mean is subtracted", "subtracts the mean (LayerNorm, not RMSNorm)",
     "减去了均值（那是 LayerNorm，不是 RMSNorm）"),
    ("05.2.2", "input-dtype", "computing in the input dtype",
     "computes in the input dtype (float16 overflows)", "在输入的数据类型中计算（float16 会溢出）"),
    ("05.2.2", "weight-before-cast", "before casting back", "multiplies by the weight before casting back",
     "在转换回原数据类型之前就乘了权重"),
    ("05.2.2", "downcasts-float64", "never downcast", "downcasts float64 to float32",
     "把 float64 降成了 float32"),
    ("05.2.2", "eps-outside-sqrt", "inside the square root", "eps added outside the square root",
     "eps 加在了平方根之外"),
    ("05.2.2", "first-axis", "last axis", "normalises over the first axis, not the last",
     "沿第一个维度而不是最后一个维度归一化"),
    ("05.2.2", "borrowed", *_BORROWED),
    ("05.2.3", "gains-not-per-row", "multiplies row i", "the gains forgotten, or scaling columns instead "
     "of rows", "忘了增益，或者缩放了列而不是行"),
    ("05.2.3", "outer-term-without-1-over-d", "(d r³)", "the outer term without its 1/d",
     "外积项少了 1/d"),
    ("05.3.1", "exponent-i-over-d-h", "-2i/d_h", "the exponent i/d_h instead of 2i/d_h",
     "指数用了 i/d_h，而不是 2i/d_h"),
    ("05.3.1", "full-width-tables", "one column per pair",
     "full-width tables (as for the half-split pairing)", "表格取了全宽（像对半拆分配对那样）"),
    ("05.3.1", "positions-from-1", "position 0", "positions counted from 1", "位置从 1 开始计数"),
    ("05.3.1", "accepts-odd-head-dim", "no whole pairs", "accepts an odd head_dim", "接受了奇数的 head_dim"),
    ("05.3.1", "borrowed", *_BORROWED),
    ("05.3.2", "half-split-pairing", "pair adjacent coordinates",
     "pairs the halves (i with i + d_h/2) instead of adjacent coordinates",
     "把前后两半配对（i 与 i + d_h/2），而不是相邻坐标"),
    ("05.3.2", "crops-table", "never crop", "crops a table built from d to fit the head",
     "把按 d 构建的表格裁剪成头的宽度"),
    ("05.3.2", "first-row-for-every-token", "as if at position 0",
     "every token takes the first row of the tables", "每个 token 都取了表格的第一行"),
    ("05.3.2", "first-sequence-rows", "its own rows", "the first sequence's rows for every sequence",
     "每个序列都用了第一个序列的行"),
    ("05.3.2", "borrowed", *_BORROWED),
    ("05.3.3", "float32-tables", "float64", "float32 tables where float64 is needed",
     "需要 float64 的地方用了 float32 表格"),
    ("05.3.4", "rows-restart-at-0", "restart the positions at 0", "the rows restart at position 0 after "
     "the cache", "缓存之后的行又从位置 0 开始"),
    ("05.3.4", "off-by-one", "one position too far", "the rows one position too far",
     "行往后错了一个位置"),
    ("05.4.1", "tiled-order", "contiguous groups", "the tiled order [0, 1, 0, 1] instead of contiguous "
     "groups", "平铺顺序 [0, 1, 0, 1]，而不是连续分组"),
    ("05.4.2", "keys-only", "is half the size", "counts the keys only, not the values",
     "只算了键，没算值"),
    ("05.4.2", "expanded-heads", "counts h_q", "counts the expanded H_q heads instead of H_kv",
     "按展开后的 H_q 个头计数，而不是 H_kv"),
    ("05.4.2", "one-layer", "one layer", "counts one layer instead of all L", "只算了一层，而不是全部 L 层"),
    ("05.4.2", "budget-for-one-row", "for one row", "the budget for one row instead of the batch",
     "按一行而不是整个批量计算预算"),
    ("05.4.2", "budget-for-expanded-cache", "of the expanded cache", "the budget for the expanded cache",
     "按展开后的缓存计算预算"),
    ("05.4.2", "rounds-not-down", "round down", "rounds the token count up or to the nearest, not down",
     "token 数向上取整或四舍五入，而不是向下取整"),
    ("05.4.2", "one-token-short", "fill the budget exactly", "one token short of the budget",
     "比预算少了一个 token"),
    ("05.4.2", "float-ratio", "four ints", "returns the ratio as a float", "比值返回成了浮点数"),
    ("05.4.3", "tiled-groups", *_TILED),
    ("05.4.3", "borrowed", *_BORROWED),
    ("05.4.4", "tiled-groups", *_TILED),
    ("05.4.4", "nan-on-masked-row", "not nan", "-inf masking: NaN on a fully masked row",
     "用 -inf 掩码：整行都被遮蔽时得到 NaN"),
    ("05.4.4", "no-scale", "1/sqrt(d_h)", "scores without the 1/sqrt(d_h) scale",
     "分数少了 1/sqrt(d_h) 缩放"),
    ("05.4.4", "causal-from-first-key", "ends at the last key",
     "the causal triangle aligned to the first key instead of the last",
     "因果三角对齐了第一个键，而不是最后一个键"),
    ("05.4.4", "mask-after-softmax", "after the softmax", "the mask applied after the softmax",
     "在 softmax 之后才加掩码"),
    ("05.4.4", "borrowed", *_BORROWED),
    ("05.5.1", "no-truncation", "truncate 8d/3", "8d/3 not truncated to an integer first",
     "没有先把 8d/3 截断为整数"),
    ("05.5.1", "rounds-down-to-multiple", "not down", "rounds down to the multiple instead of up",
     "向下而不是向上取到倍数"),
    ("05.5.1", "no-rounding-to-multiple", "up to a multiple", "not rounded up to a multiple",
     "没有向上取到倍数"),
    ("05.5.1", "returns-float", "return an int", "returns a float", "返回了浮点数"),
    ("05.5.2", "gate-and-up-swapped", "silu on w3(x) instead of the gate w1(x)",
     "SiLU on the up branch w3 instead of the gate w1", "SiLU 用在了上投影 w3 上，而不是门控 w1"),
    ("05.5.2", "silu-after-product", "silu applied after the product", "SiLU applied after the product",
     "在乘积之后才用 SiLU"),
    ("05.5.2", "relu", "relu instead of", "ReLU instead of SiLU", "用了 ReLU 而不是 SiLU"),
    ("05.5.2", "gelu", "gelu instead of", "GELU instead of SiLU", "用了 GELU 而不是 SiLU"),
    ("05.5.2", "sigmoid", "sigmoid instead of", "sigmoid instead of SiLU", "用了 sigmoid 而不是 SiLU"),
    ("05.5.2", "no-up-branch", "no up branch", "no up branch (the product with w3(x) missing)",
     "缺少上投影分支（没有乘以 w3(x)）"),
    ("05.5.2", "bias", "without bias", "linear layers with a bias", "线性层带了偏置"),
    ("05.5.2", "down-projection-transposed", "w2 maps m -> d", "the down projection w2 transposed",
     "下投影 w2 的形状转置了"),
    ("05.5.2", "computes-in-float32", "bfloat16 output", "computes in float32 (bfloat16 in, float32 out)",
     "在 float32 中计算（输入 bfloat16，输出 float32）"),
    ("05.5.2", "casts-input-to-float32", "fails on a bfloat16 input",
     "casts the input to float32 and fails on bfloat16", "把输入转成 float32，在 bfloat16 上出错"),
    ("05.5.2", "borrowed", *_BORROWED),
    ("05.5.3", "first-residual-missing", "first half's residual is missing",
     "the attention half's residual missing or overwritten", "注意力这一半的残差缺失或被覆盖"),
    ("05.5.3", "second-residual-missing", "second half's residual is missing",
     "the MLP half's residual missing", "MLP 这一半的残差缺失"),
    ("05.5.3", "post-norm", "pre-norm", "post-norm (the norm after the sum) instead of pre-norm",
     "后归一化（相加之后才归一化），而不是前归一化"),
    ("05.5.3", "same-norm-twice", "both halves", "the same norm used for both halves",
     "两个半部分用了同一个归一化"),
    ("05.5.3", "norms-swapped", "norms are swapped", "the two norms swapped", "两个归一化用反了"),
    ("05.5.3", "normalised-copy-added", "normalised copy", "adds the normalised copy back instead of x",
     "加回的是归一化后的副本，而不是 x"),
    ("05.5.3", "mlp-reads-x", "second half starts from h", "the MLP half reads x instead of h",
     "MLP 这一半读取了 x 而不是 h"),
    ("05.5.3", "mlp-first", "attention half comes first", "the MLP half before the attention half",
     "MLP 这一半放在了注意力这一半之前"),
    ("05.5.3", "x-in-place", "in place", "changes x in place", "原地修改了 x"),
    ("05.5.3", "part-called-twice", "exactly once", "a part called twice", "某个部件被调用了两次"),
    ("05.5.3", "borrowed", *_BORROWED),
    ("05.6.1", "tied-counted-twice", "count it once", "the tied embedding and head counted twice",
     "共享的词嵌入和输出头被算了两次"),
    ("05.6.1", "final-norm-forgotten", "gains are missing", "the final norm forgotten",
     "忘了最后的归一化"),
    ("05.6.1", "one-norm-per-layer", "per layer, dim gains each", "one norm per layer instead of two",
     "每层只算了一个归一化，而不是两个"),
    ("05.6.1", "kv-full-width", "fewer than wq's", "K and V at full width (GQA ignored)",
     "K 和 V 取了全宽（忽略了 GQA）"),
    ("05.6.2", "positions-ignore-padding", "whatever the padding", "positions 0..T-1 whatever the padding",
     "无论填充如何，位置都是 0..T-1"),
    ("05.6.2", "positions-from-1", "first real token is at 1", "positions from 1 (the running count "
     "without the -1)", "位置从 1 开始（累计计数没有减 1）"),
    ("05.6.2", "padding-at-minus-1", "padding is at -1", "padding at position -1 (no clamp)",
     "填充位于位置 -1（没有截到 0）"),
    ("05.6.2", "borrowed", *_BORROWED),
    ("05.6.3", "causal-from-first-key", "not a triangle from the first key",
     "the causal triangle aligned to the first keys", "因果三角对齐了前面的键"),
    ("05.6.3", "padding-forgotten", "padding is forgotten", "the padding forgotten (causal only)",
     "忘了填充（只有因果掩码）"),
    ("05.6.3", "padding-on-queries", "applied to the queries", "the padding applied to the queries "
     "instead of the keys", "填充掩码加在了查询上，而不是键上"),
    ("05.6.3", "float-mask", "not an additive float mask", "an additive float mask instead of booleans",
     "用了加性的浮点掩码，而不是布尔值"),
    ("05.6.3", "borrowed", *_BORROWED),
    ("05.6.4", "unshifted-loss", "the unshifted loss", "the unshifted loss (position t predicts t)",
     "没有移位的损失（位置 t 预测的是 t）"),
    ("05.6.4", "mean-over-all-targets", "mean over all targets", "the mean over all targets, ignored ones "
     "included", "对所有目标取平均，被忽略的也算在内"),
    ("05.6.4", "nan-when-nothing-counted", "no target counted: return 0.0", "NaN when no target is counted",
     "没有计入任何目标时得到 NaN"),
    ("05.6.4", "ignore-index-unused", "use the argument", "the ignore_index argument not used",
     "没有使用 ignore_index 参数"),
    ("05.6.4", "borrowed", *_BORROWED),
    ("05.6.5", "finished-row-appends-token", "appends its eos: [7, 5, 2]",
     "a finished row appends its sampled token", "已结束的行仍追加了采样到的 token"),
    ("05.6.5", "finished-again-only-on-eos", "stays finished", "a finished row counted as finished only "
     "on EOS", "已结束的行只有在采到 EOS 时才算结束"),
    ("05.6.5", "eos-replaced-by-pad", "appends its eos: [7, 0, 0]", "EOS replaced by pad",
     "EOS 被替换成了填充"),
    ("05.9.1", "one-answer-for-the-batch", "each row gets its own answer", "one answer for the whole batch",
     "整个批量只给了一个答案"),
    ("05.9.2", "never-dedents", "an indented method parses once dedented",
     "never dedents: an indented method is 'not code'", "从不去缩进：缩进的方法被判为“不是代码”"),
    ("05.9.2", "dedents-first", "as it stands before dedenting",
     "dedents first: a snippet that parses is 'needs context'",
     "先去缩进：本来就能解析的片段被判为“需要上下文”"),
    ("05.9.2", "strip-not-dedent", "strip() only the first line's", "strip() instead of dedent",
     "用了 strip() 而不是 dedent"),
    ("05.9.2", "runs-the-snippet", "never run it", "runs the snippet instead of parsing it",
     "运行了代码片段，而不是解析它"),
    ("05.9.3", "every-target-counted", "costs exactly 0.0", "every target counted (no ignore_index)",
     "所有目标都计入了（没有 ignore_index）"),
    ("05.9.3", "minus-sign-missing", "minus sign is missing", "the minus sign missing", "少了负号"),
    ("05.9.3", "softmax-over-rows", "over the rows instead of the classes",
     "the softmax over the rows, not the classes", "softmax 沿行而不是沿类别计算"),
    ("05.9.3", "picks-at-minus-100", "-100 is not a class", "picks at -100 before masking",
     "在遮蔽之前就按 -100 取值"),
    ("05.9.3", "mean-not-per-target", "one loss per target", "the mean instead of one loss per target",
     "返回了平均值，而不是每个目标一个损失"),
    ("05.9.3", "borrowed", *_BORROWED),
    ("05.10.1", "nibble-order", "weights 0..15 from the low nibbles",
     "the nibbles in the wrong order (high first, or interleaved)", "半字节顺序错了（高位在前，或交错排列）"),
    ("05.10.2", "padding-found-by-id", "found by position, not by id",
     "padding found by id: every end of turn hidden (pad = EOS)",
     "按 ID 找填充：每个轮次结束符都被隐藏了（pad = EOS）"),
    ("05.10.2", "padding-labelled-pad-id", "only the pad after it is -100",
     "padding labelled with the pad id instead of -100", "填充的标签用了 pad ID，而不是 -100"),
    ("05.10.2", "labels-shifted", "labels unshifted", "the labels shifted by hand", "手动移位了标签"),
    ("05.10.2", "padding-side-or-value", "right padding, each row then pad_id",
     "left padding, or padded with 0 instead of the pad id", "左侧填充，或者用 0 而不是 pad ID 填充"),
    ("05.10.3", "rmsnorm-subtracts-mean", "a norm that subtracts the mean", "RMSNorm subtracting the mean",
     "RMSNorm 减去了均值"),
    ("05.10.3", "rmsnorm-bfloat16", "rmsnorm (section 05.2): output on x of shape (2, 7, 64), torch.bfloat16",
     "RMSNorm wrong in bfloat16 only (e.g. the weight applied before casting back)",
     "RMSNorm 只在 bfloat16 下出错（例如在转换回去之前就乘了权重）"),
    ("05.10.3", "half-split-rope", "half-split pairing", "the half-split RoPE pairing",
     "RoPE 用了对半拆分配对"),
    ("05.10.3", "tiled-groups", "[0, 1, 0, 1] grouping", "the [0, 1, 0, 1] grouping of K/V heads",
     "键值头按 [0, 1, 0, 1] 分组"),
    ("05.10.3", "no-scale", "without the 1/sqrt(d_h) scale", "attention without the 1/sqrt(d_h) scale",
     "注意力少了 1/sqrt(d_h) 缩放"),
    ("05.10.3", "nan-on-masked-row", "gives nan; it must give zeros", "-inf masking: NaN on a fully "
     "masked row", "用 -inf 掩码：整行都被遮蔽时得到 NaN"),
    ("05.10.3", "post-norm", "it matches post-norm", "a post-norm block", "后归一化的块"),
    ("05.10.3", "decoder-block-differs", "decoder_block (section 05.5)",
     "the decoder block differs from tinyk's (an overwritten residual, for one)",
     "解码器块与 tinyk 的不同（例如残差被覆盖）"),
    ("05.10.3", "positions-ignore-padding", "whatever the padding", "positions shifted by padding",
     "位置被填充推移了"),
    ("05.10.3", "causal-from-first-key", "aligned to the first query_len keys",
     "the mask aligned to the first T keys", "掩码对齐了前 T 个键"),
    ("05.10.3", "unshifted-loss", "the unshifted loss", "the unshifted loss", "没有移位的损失"),
]

CATALOGUE: tuple[Mistake, ...] = tuple(Mistake(f"{exercise}:{name}", words, en, zh)
                                       for exercise, name, words, en, zh in _TABLE)
_BY_ID = {m.id: m for m in CATALOGUE}
_NOTE = re.compile(r"(?:^|; )mistake (\d+\.\d+\.\d+:[a-z0-9-]+)(?=;|$)")


def exercise_of(grade_id: str) -> str:
    """``ex_05_3_2_test`` or ``ex_05_3_2_solution`` -> ``05.3.2`` ('' for another name)."""
    found = re.fullmatch(r"ex_(\d+)_(\d+)_(\d+)(?:_test|_solution)?", grade_id)
    return ".".join(found.groups()) if found else ""


def of_exercise(grade_id: str) -> list[Mistake]:
    """The catalogued mistakes of an exercise (by its test's or its answer's grade_id)."""
    exercise = exercise_of(grade_id)
    return [m for m in CATALOGUE if m.exercise == exercise]


def by_id(mistake_id: str) -> Mistake:
    """The mistake of that id; ``KeyError`` naming the id when the catalogue has none."""
    try:
        return _BY_ID[mistake_id]
    except KeyError:
        raise KeyError(f"no catalogued mistake {mistake_id!r} (tinyk.mistakes.CATALOGUE)") from None


def match(grade_id: str, message: str) -> Mistake | None:
    """The mistake a failing test's ``message`` names: the first of the exercise's mistakes
    whose words it contains (case ignored), or None."""
    text = message.lower()
    return next((m for m in of_exercise(grade_id) if m.words in text), None)


def note(grade_id: str, message: str) -> str:
    """What the grader appends to a row's detail: ``"; mistake <id>"``, or '' when the
    message names no catalogued mistake."""
    found = match(grade_id, message)
    return f"; mistake {found.id}" if found else ""


def mistakes_in(detail: str) -> list[str]:
    """The mistake ids a row's ``detail`` carries (:func:`note`), in order."""
    return _NOTE.findall(detail)
