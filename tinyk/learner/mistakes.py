"""The catalogue of classic mistakes in the chapter's exercises (course section "For instructors").

Each mistake has a stable id (``05.3.2:half-split-pairing``: the exercise, then a name), a
short label in English (its Chinese is in the package's catalogue, ``tinyk/locale/zh_CN.po``:
:mod:`tinyk.translations.package_catalogue`), and the words its visible test prints when an answer
makes it: a lowercase piece of the failing assert's message. A visible test runs first in
its graded cell, so the same message reaches the grader, which writes the id into the
``detail`` column of ``grades.csv`` (:func:`note`); the class report counts them
(:mod:`tinyk.reports.class_report`). The course's tests hold, for every mistake, at least one wrong
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
    visible test's message), ``en`` (a short label) and its Chinese, ``zh``."""

    id: str
    words: str
    en: str

    @property
    def zh(self) -> str:
        """The Chinese label, from the package's catalogue (``tinyk/locale/zh_CN.po``, msgid
        the English label); :class:`tinyk.translations.package_catalogue.MissingChinese` when it has none."""
        from tinyk.translations.package_catalogue import chinese

        return chinese(self.en)

    @property
    def exercise(self) -> str:
        """The exercise's number, ``05.3.2``."""
        return self.id.split(":")[0]

    @property
    def grade_id(self) -> str:
        """The grade_id of the exercise's test cell, ``ex_05_3_2_test``."""
        return f"ex_{self.exercise.replace('.', '_')}_test"


_BORROWED = ("not allowed here",
             "calls a ready-made version (the course's or PyTorch's) "
             "instead of the learner's own code")
_TILED = ("contiguous groups",
          "tiled heads [0, 1, 0, 1] (repeat, tile or the wrong axis) "
          "instead of contiguous groups [0, 0, 1, 1]")

# (exercise, name, words, English), each exercise's specific messages first.
_TABLE: list[tuple[str, str, str, str]] = [
    ("05.1.1", "not-a-pair", "return (none, false)",
     "no (None, False) pair when n_heads does not divide dim"),
    ("05.1.1", "float-division", "use integer division", "d_h from / (a float) instead of //"),
    ("05.1.1", "odd-accepted", "which is odd", "an odd head width accepted for RoPE"),
    ("05.1.2", "not-none", "equal groups: return none", "no None when the groups are unequal"),
    ("05.1.2", "float-division", "use integer division", "the group size from / (a float) instead of //"),
    ("05.1.3", "mha-left-out", "plain multi-head attention", "H_kv = H_q (multi-head attention) left out"),
    ("05.1.3", "mqa-left-out", "multi-query attention", "H_kv = 1 (multi-query attention) left out"),
    ("05.2.1", "eps-outside-sqrt", "added outside the square root", "eps added outside the square root"),
    ("05.2.1", "sum-not-mean", "root of the sum of the squares",
     "the sum of the squares instead of their mean"),
    ("05.2.1", "mean-of-abs", "the mean of |x|", "the mean of |x| instead of the root mean square"),
    ("05.2.1", "no-square-root", "without its square root",
     "the mean of the squares without its square root"),
    ("05.2.1", "eps-ignored", "the eps argument is ignored", "the eps argument ignored"),
    ("05.2.1", "eps-before-mean", "added to the sum before dividing",
     "eps added to the sum before dividing by d"),
    ("05.2.2", "extra-state", "holds one entry, weight", "saves more than the weight in its state dict"),
    ("05.2.2", "not-mean-of-squares", "root of the mean of the squares",
     "the mean of x (or of |x|, or the sum of squares) instead of the mean of the squares"),
    ("05.2.2", "eps-ignored", "add self.eps", "the eps argument ignored (none, or a fixed constant)"),
    ("05.2.2", "no-cast-back", "never cast back", "the normalised vector never cast back to the input dtype"),
    ("05.2.2", "subtracts-mean", "no mean is subtracted", "subtracts the mean (LayerNorm, not RMSNorm)"),
    ("05.2.2", "weight-before-normalising", "before it was normalised",
     "multiplies x by the weight before normalising"),
    ("05.2.2", "no-keepdim", "without keepdim=true", "the mean without keepdim=True (does not broadcast)"),
    ("05.2.2", "input-dtype", "computing in the input dtype",
     "computes in the input dtype (float16 overflows)"),
    ("05.2.2", "weight-before-cast", "before casting back", "multiplies by the weight before casting back"),
    ("05.2.2", "downcasts-float64", "never downcast", "downcasts float64 to float32"),
    ("05.2.2", "eps-outside-sqrt", "inside the square root", "eps added outside the square root"),
    ("05.2.2", "axis-1", "over a fixed axis", "the mean over dim=1 (a fixed axis) instead of the last"),
    ("05.2.2", "first-axis", "last axis", "normalises over the first axis, not the last"),
    ("05.2.2", "detached", "keep every step in the graph",
     "a step detached from the graph (wrong gradients)"),
    ("05.2.2", "borrowed", *_BORROWED),
    ("05.2.3", "borrowed", *_BORROWED),  # its message writes out the formula
    ("05.2.3", "gains-not-per-row", "multiplies row i",
     "the gains forgotten, or scaling columns instead of rows"),
    ("05.2.3", "outer-term-without-1-over-d", "missing its 1/d", "the outer term without its 1/d"),
    ("05.2.3", "outer-term-missing", "the outer-product term is missing",
     "the outer-product term -x_i x_j / (d r³) left out"),
    ("05.2.3", "outer-term-sign", "the outer term is added", "the outer term added instead of subtracted"),
    ("05.2.3", "identity-not-over-r", "not δ_ij alone", "the identity term not divided by r"),
    ("05.2.3", "eps-outside-r", "eps is left out of r", "eps left out of r"),
    ("05.2.3", "eps-outside-sqrt", "added outside the square root", "eps added outside the square root of r"),
    ("05.3.1", "transposed-tables", "transposed", "transposed tables (head_dim/2 × end)"),
    ("05.3.1", "integer-exponent", "integer division", "the exponent from integer division (always 0)"),
    ("05.3.1", "theta-ignored", "ignore the theta argument", "the theta argument ignored (a fixed base)"),
    ("05.3.1", "exponent-i-over-d-h", "-2i/d_h", "the exponent i/d_h instead of 2i/d_h"),
    ("05.3.1", "wrong-default-theta", "default theta is 10000", "a default theta other than 10000"),
    ("05.3.1", "full-width-tables", "one column per pair",
     "full-width tables (as for the half-split pairing)"),
    ("05.3.1", "positions-from-1", "not 1..end", "positions counted from 1"),
    ("05.3.1", "rows-short", "one row per position", "too few rows (torch.arange(end - 1))"),
    ("05.3.1", "cos-sin-swapped", "cos and sin swapped", "cos and sin swapped (sin returned first)"),
    ("05.3.1", "accepts-odd-head-dim", "no whole pairs", "accepts an odd head_dim"),
    ("05.3.1", "accepts-non-positive-head-dim", "not a positive width", "accepts a head_dim of 0 or less"),
    ("05.3.1", "borrowed", *_BORROWED),
    ("05.3.2", "rotates-in-place", "wrote into its input",
     "rotates in place (writes the rotated pairs into xq or xk)"),
    ("05.3.2", "one-input-unrotated", "rotate both q and k", "only one of q and k rotated"),
    ("05.3.2", "double-angle", "twice the angle", "turned by twice the angle"),
    ("05.3.2", "cat-write-back", "written back as halves", "the rotated pairs written back as halves (cat)"),
    ("05.3.2", "sin-sign-swapped", "the sign of sin swapped",
     "turns the wrong way (the sign of sin swapped)"),
    ("05.3.2", "halves-read-pairs-written", "read as halves",
     "reads the halves (i with i + d_h/2) but writes back adjacent pairs"),
    ("05.3.2", "partial-rotation", "rotate every pair",
     "rotates only the first pairs, the rest passed through"),
    ("05.3.2", "half-split-pairing", "pair adjacent coordinates",
     "pairs the halves (i with i + d_h/2) instead of adjacent coordinates"),
    ("05.3.2", "crops-table", "never crop", "crops a table built from d to fit the head"),
    ("05.3.2", "first-row-for-every-token", "as if at position 0",
     "every token takes the first row of the tables"),
    ("05.3.2", "dtype-not-cast-back", "in its input's dtype", "not cast back to the input's dtype"),
    ("05.3.2", "per-sequence-tables-fail", "line it up as b×t×1×d_h/2",
     "fails on B×T×d_h/2 tables (their batch axis not kept)"),
    ("05.3.2", "first-sequence-rows", "its own rows", "the first sequence's rows for every sequence"),
    ("05.3.2", "borrowed", *_BORROWED),
    ("05.3.3", "not-a-float", "return a python float", "returns a tensor instead of a Python float"),
    ("05.3.3", "same-row", "k with row n", "q and k rotated with the same row"),
    ("05.3.3", "theta-ignored", "pass theta on", "the theta argument not passed on to the tables"),
    ("05.3.3", "tables-too-short", "max(m, n) + 1 rows",
     "tables too short when the query comes after the key"),
    ("05.3.3", "positions-swapped", "not the other way round", "q rotated to n and k to m"),
    ("05.3.3", "float32-tables", "float64", "float32 tables where float64 is needed"),
    ("05.3.4", "t-from-heads-axis", "your t counts the heads",
     "T read from the heads axis, xq.shape[2], instead of xq.shape[1]"),
    ("05.3.4", "one-row", "take t rows", "one row of the tables for T new tokens"),
    ("05.3.4", "too-strict-check", "that fits", "ValueError when the tables have exactly enough rows"),
    ("05.3.4", "check-left-to-tinyk", "not from your check",
     "no length check of its own (the error comes from tinyk)"),
    ("05.3.4", "rows-restart-at-0", "restart the positions at 0",
     "the rows restart at position 0 after the cache"),
    ("05.3.4", "off-by-one", "one position too far", "the rows one position too far"),
    ("05.3.4", "no-length-check", "and the tables have 16 rows",
     "no ValueError when the tables are too short"),
    ("05.4.1", "group-size-inverted", "h_kv // h_q = 0",
     "the group size H_kv // H_q (0) instead of H_q // H_kv"),
    ("05.4.1", "float-division", "use integer division", "the group size from / (a float) instead of //"),
    ("05.4.1", "wrong-length", "one entry for each of the h_q",
     "a list of another length than H_q (one entry per K/V head, say)"),
    ("05.4.1", "divides-by-h-kv", "not by h_kv",
     "query head h reads h // H_kv instead of h // (H_q // H_kv)"),
    ("05.4.1", "head-out-of-range", "does not exist", "K/V heads past H_kv - 1 (h % group, say)"),
    ("05.4.1", "tiled-order", "contiguous groups",
     "the tiled order [0, 1, 0, 1] instead of contiguous groups"),
    ("05.4.2", "float-max-tokens", "max_tokens is a float", "max_tokens as a float (/ instead of //)"),
    ("05.4.2", "batch-ignored", "the batch is ignored", "the batch ignored (one row's cache)"),
    ("05.4.2", "keys-only", "is half the size", "counts the keys only, not the values"),
    ("05.4.2", "expanded-heads", "counts h_q", "counts the expanded H_q heads instead of H_kv"),
    ("05.4.2", "budget-for-one-layer", "max_tokens for one layer", "the budget for one layer's cache"),
    ("05.4.2", "one-layer", "one layer", "counts one layer instead of all L"),
    ("05.4.2", "numbers-not-bytes", "counts numbers, not bytes",
     "counts numbers, not bytes (bytes_per_element left out)"),
    ("05.4.2", "counts-bits", "counts bits", "counts bits (a factor 8)"),
    ("05.4.2", "model-width-per-head", "not dim = 768", "each head stores dim numbers instead of d_h"),
    ("05.4.2", "ratio-inverted", "h_kv // h_q rounds to 0",
     "the ratio H_kv // H_q (0) instead of H_q // H_kv"),
    ("05.4.2", "budget-for-one-row", "for one row", "the budget for one row instead of the batch"),
    ("05.4.2", "budget-for-expanded-cache", "of the expanded cache", "the budget for the expanded cache"),
    ("05.4.2", "rounds-not-down", "round down", "rounds the token count up or to the nearest, not down"),
    ("05.4.2", "one-token-short", "fill the budget exactly", "one token short of the budget"),
    ("05.4.2", "float-ratio", "four ints", "returns the ratio as a float"),
    ("05.4.2", "bytes-ignored", "not a fixed 4 bytes",
     "the bytes_per_element argument ignored (4 bytes always)"),
    ("05.4.2", "expanded-twice", "= 4 times as large",
     "the expanded cache taken as twice the unexpanded one"),
    ("05.4.3", "view-of-expanded", "use .reshape, not .view", ".view on an expanded tensor (not contiguous)"),
    ("05.4.3", "expand-non-singleton", "expand grows only axes of size 1",
     "the head axis itself expanded (expand needs an axis of size 1)"),
    ("05.4.3", "copies-on-time-axis", "along the time axis (dim=1)", "the copies along the time axis"),
    ("05.4.3", "copies-on-last-axis", "along d_h (the last axis)", "the copies along d_h"),
    ("05.4.3", "n-rep-as-heads", "not the number of query heads", "n_rep taken as the number of query heads"),
    ("05.4.3", "tiled-groups", *_TILED),
    ("05.4.3", "dtype-lost", "bfloat16 in, bfloat16 out", "a new float32 tensor instead of x's dtype"),
    ("05.4.3", "n-rep-fixed", "not a fixed 2", "n_rep taken as 2 whatever the argument says"),
    ("05.4.3", "borrowed", *_BORROWED),
    ("05.4.4", "k-not-transposed", "q @ k.transpose(-2, -1)", "q @ k without transposing k"),
    ("05.4.4", "n-rep-inverted", "h_kv // h_q rounds to 0", "n_rep = H_kv // H_q (0) instead of H_q // H_kv"),
    ("05.4.4", "scale-by-d", "divided by d_h", "the scores divided by d_h instead of sqrt(d_h)"),
    ("05.4.4", "scale-multiplied", "multiplied by sqrt(d_h)", "the scores multiplied by sqrt(d_h)"),
    ("05.4.4", "upper-triangle", "upper triangle (triu)", "the upper triangle (triu) instead of tril"),
    ("05.4.4", "no-causal-mask", "no causal mask when mask is none", "no causal mask when mask is None"),
    ("05.4.4", "n-rep-fixed", "not a fixed number", "n_rep a fixed number instead of H_q // H_kv"),
    ("05.4.4", "given-mask-ignored", "the given mask is ignored",
     "a given mask ignored (causal only)"),
    ("05.4.4", "bool-mask-added", "boolean mask added to the scores",
     "the boolean mask added to the scores as an additive float mask"),
    ("05.4.4", "softmax-over-queries", "softmax ran over the queries",
     "the softmax over the queries (dim=-2)"),
    ("05.4.4", "mask-inverted", "the mask is inverted", "the mask inverted (True taken as blocked)"),
    ("05.4.4", "kv-on-time-axis", "not the time axis", "K/V heads copied along the time axis"),
    ("05.4.4", "scale-all-heads", "width of all heads", "scores scaled by 1/sqrt(H_q·d_h), not 1/sqrt(d_h)"),
    ("05.4.4", "tiled-groups", *_TILED),
    ("05.4.4", "nan-on-masked-row", "not nan", "-inf masking: NaN on a fully masked row"),
    ("05.4.4", "no-scale", "1/sqrt(d_h)", "scores without the 1/sqrt(d_h) scale"),
    ("05.4.4", "causal-from-first-key", "ends at the last key",
     "the causal triangle aligned to the first key instead of the last"),
    ("05.4.4", "mask-after-softmax", "after the softmax", "the mask applied after the softmax"),
    ("05.4.4", "dtype-not-cast-back", "cast the result back", "the result not cast back to q's dtype"),
    ("05.4.4", "heads-after-positions", "b×h_q×t×d_h = (1, 1, 3, 2), not (1, 3, 1, 2)",
     "returns B×T×H_q×d_h (positions before heads)"),
    ("05.4.4", "average-on-masked-row", "averages every value",
     "a fully masked row gets the average of all values instead of zeros"),
    ("05.4.4", "borrowed", *_BORROWED),
    ("05.5.1", "four-d", "4d is the width of a two-matrix mlp",
     "4d (a two-matrix MLP's width) instead of 8d/3"),
    ("05.5.1", "two-thirds-of-d", "2d/3 is 2/3 of d", "2d/3 instead of 8d/3"),
    ("05.5.1", "integer-division-first", "8 // 3 is 2", "8 // 3 · d (that is, 2d) instead of int(8d/3)"),
    ("05.5.1", "extra-multiple", "is already a multiple of", "a multiple added when m is one already"),
    ("05.5.1", "no-truncation", "truncate 8d/3", "8d/3 not truncated to an integer first"),
    ("05.5.1", "rounds-down-to-multiple", "not down", "rounds down to the multiple instead of up"),
    ("05.5.1", "no-rounding-to-multiple", "up to a multiple", "not rounded up to a multiple"),
    ("05.5.1", "returns-float", "return an int", "returns a float"),
    ("05.5.2", "no-down-projection", "w2 (down) maps them back",
     "w2 never applied (the output has m features)"),
    ("05.5.2", "layers-renamed", "three layers named w1 (gate)",
     "layers named otherwise than w1, w2, w3 (a fused w13, say)"),
    ("05.5.2", "hidden-dim-ignored", "use the hidden_dim argument", "the hidden_dim argument ignored"),
    ("05.5.2", "weight-not-transposed", "x @ weight needs its transpose",
     "x @ weight without transposing an nn.Linear weight"),
    ("05.5.2", "gate-and-up-swapped", "silu on w3(x) instead of the gate w1(x)",
     "SiLU on the up branch w3 instead of the gate w1"),
    ("05.5.2", "silu-after-product", "silu applied after the product", "SiLU applied after the product"),
    ("05.5.2", "relu", "relu instead of", "ReLU instead of SiLU"),
    ("05.5.2", "gelu", "gelu instead of", "GELU instead of SiLU"),
    ("05.5.2", "sigmoid", "sigmoid instead of", "sigmoid instead of SiLU"),
    ("05.5.2", "no-up-branch", "no up branch", "no up branch (the product with w3(x) missing)"),
    ("05.5.2", "bias", "without bias", "linear layers with a bias"),
    ("05.5.2", "down-projection-transposed", "w2 maps m -> d", "the down projection w2 transposed"),
    ("05.5.2", "computes-in-float32", "bfloat16 output", "computes in float32 (bfloat16 in, float32 out)"),
    ("05.5.2", "casts-input-to-float32", "fails on a bfloat16 input",
     "casts the input to float32 and fails on bfloat16"),
    ("05.5.2", "fixed-leading-shape", "takes any leading shape", "works for B×T×d inputs only"),
    ("05.5.2", "gelu-tanh", "gelu(approximate='tanh')", "tanh-approximated GELU instead of SiLU"),
    ("05.5.2", "silu-both-branches", "silu on both branches", "SiLU on both branches"),
    ("05.5.2", "sum-not-product", "a sum instead of the product", "a sum of the branches, not their product"),
    ("05.5.2", "residual-inside", "the decoder block adds x", "adds the residual x inside the SwiGLU"),
    ("05.5.2", "dropout", "no dropout", "dropout or other randomness in forward"),
    ("05.5.2", "borrowed", *_BORROWED),
    ("05.5.3", "mlp-half-missing", "the mlp half is missing", "the MLP half missing"),
    ("05.5.3", "attention-norm-missing", "attention_norm is never called",
     "attention_norm never called (attention reads x)"),
    ("05.5.3", "norm-after-mlp", "the norm after it", "ffn_norm applied after the MLP instead of before"),
    ("05.5.3", "no-residual", "both residuals are missing", "both residual sums missing"),
    ("05.5.3", "mlp-norm-missing", "ffn_norm is never called",
     "no norm before the MLP half (ffn_norm never called)"),
    ("05.5.3", "first-residual-missing", "first half's residual is missing",
     "the attention half's residual missing or overwritten"),
    ("05.5.3", "second-residual-missing", "second half's residual is missing",
     "the MLP half's residual missing"),
    ("05.5.3", "post-norm", "pre-norm", "post-norm (the norm after the sum) instead of pre-norm"),
    ("05.5.3", "same-norm-twice", "both halves", "the same norm used for both halves"),
    ("05.5.3", "norms-swapped", "norms are swapped", "the two norms swapped"),
    ("05.5.3", "normalised-copy-added", "normalised copy", "adds the normalised copy back instead of x"),
    ("05.5.3", "mlp-reads-x", "second half starts from h", "the MLP half reads x instead of h"),
    ("05.5.3", "mlp-first", "attention half comes first", "the MLP half before the attention half"),
    ("05.5.3", "x-in-place", "in place", "changes x in place"),
    ("05.5.3", "part-called-twice", "exactly once", "a part called twice"),
    ("05.5.3", "changes-dtype", "to one of that shape and dtype", "returns another shape or dtype than x's"),
    ("05.5.3", "borrowed", *_BORROWED),
    ("05.6.1", "two-mistakes", "two at once", "two of the classic counting mistakes at once"),
    ("05.6.1", "norms-forgotten", "two per layer and the final one", "every RMSNorm gain forgotten"),
    ("05.6.1", "two-mlp-matrices", "three matrices", "an MLP of two matrices instead of three"),
    ("05.6.1", "layers-counted-once", "one layer counted", "one layer counted (n_layers ignored)"),
    ("05.6.1", "tied-counted-twice", "count it once", "the tied embedding and head counted twice"),
    ("05.6.1", "final-norm-forgotten", "gains are missing", "the final norm forgotten"),
    ("05.6.1", "one-norm-per-layer", "per layer, dim gains each", "one norm per layer instead of two"),
    ("05.6.1", "kv-full-width", "fewer than wq's", "K and V at full width (GQA ignored)"),
    ("05.6.1", "wo-forgotten", "wo (dim×dim", "the output projection wo forgotten"),
    ("05.6.1", "embedding-forgotten", "the embedding's v·dim", "the embedding forgotten"),
    ("05.6.1", "float-division", "/ gives a float", "head_dim from / (a float) instead of //"),
    ("05.6.1", "borrowed", "not allowed here",
     "counts the parameters of a model built with the course's code instead of from the sizes"),
    ("05.6.2", "cumsum-over-batch", "over the batch axis", "the running count taken over the batch axis"),
    ("05.6.2", "right-padding-at-0", "the padding set to 0", "the right padding set to position 0"),
    ("05.6.2", "positions-ignore-padding", "whatever the padding", "positions 0..T-1 whatever the padding"),
    ("05.6.2", "positions-from-1", "first real token is at 1",
     "positions from 1 (the running count without the -1)"),
    ("05.6.2", "padding-at-minus-1", "padding is at -1", "padding at position -1 (no clamp)"),
    ("05.6.2", "int32-positions", "positions are torch.long (int64)",
     "int32 (or smaller) positions instead of torch.long"),
    ("05.6.2", "float-positions", "return a torch.long tensor", "float positions instead of torch.long"),
    ("05.6.2", "shifted-by-padding-count", "shifted by the number of padding tokens",
     "0..T-1 shifted by the padding count (wrong for right padding)"),
    ("05.6.2", "borrowed", *_BORROWED),
    ("05.6.3", "causal-from-first-key", "not a triangle from the first key",
     "the causal triangle aligned to the first keys"),
    ("05.6.3", "padding-forgotten", "padding is forgotten", "the padding forgotten (causal only)"),
    ("05.6.3", "padding-on-rows-too", "as well as the keys", "padding on the queries and the keys"),
    ("05.6.3", "mask-inverted", "the mask is inverted", "the mask inverted (True taken as blocked)"),
    ("05.6.3", "upper-triangle", "upper triangle (triu)", "the upper triangle (triu) instead of tril"),
    ("05.6.3", "diagonal-blocked", "the diagonal is blocked", "the diagonal blocked (tril(T_k - T - 1))"),
    ("05.6.3", "padding-on-queries", "applied to the queries",
     "the padding applied to the queries instead of the keys"),
    ("05.6.3", "float-mask", "not an additive float mask", "an additive float mask instead of booleans"),
    ("05.6.3", "batch-on-head-axis", "put its batch axis first", "valid's batch axis put on the head axis"),
    ("05.6.3", "no-head-axis", "without the head axis", "no head axis (B×T×T_k)"),
    ("05.6.3", "valid-not-lined-up", "line it up as b×1×1×t_k",
     "valid combined with the T×T_k triangle as it is (a RuntimeError)"),
    ("05.6.3", "or-not-and", "every key allowed", "causal | valid instead of causal & valid"),
    ("05.6.3", "borrowed", *_BORROWED),
    ("05.6.4", "classes-not-on-dim-1", "takes the classes on dim 1",
     "B×T×V logits given to F.cross_entropy unflattened"),
    ("05.6.4", "unshifted-loss", "the unshifted loss", "the unshifted loss (position t predicts t)"),
    ("05.6.4", "ignored-as-class-0", "counted as class 0", "the ignored targets counted as class 0"),
    ("05.6.4", "mean-over-all-targets", "mean over all targets",
     "the mean over all targets, ignored ones included"),
    ("05.6.4", "nan-when-nothing-counted", "no target counted: return 0.0", "NaN when no target is counted"),
    ("05.6.4", "ignore-index-unused", "use the argument", "the ignore_index argument not used"),
    ("05.6.4", "mean-of-row-means", "the mean of each row's mean",
     "the mean of each row's mean instead of one mean over the batch"),
    ("05.6.4", "returns-a-number", "return a 0-d tensor",
     "a Python number (.item()) instead of a 0-d tensor"),
    ("05.6.4", "shift-reversed", "the shift reversed", "the shift reversed (logits[:, 1:], labels[:, :-1])"),
    ("05.6.4", "divided-by-numel", "labels.numel()", "the summed loss divided by labels.numel()"),
    ("05.6.4", "softmax-before-loss", "a softmax before f.cross_entropy", "a softmax before F.cross_entropy"),
    ("05.6.4", "shifted-too-far", "shift by one step", "targets shifted by more than one step"),
    ("05.6.4", "view-of-slice", "so .view fails on it", ".view on the slice logits[:, :-1] (not contiguous)"),
    ("05.6.4", "sum-not-divided", "not divided by the number of counted targets",
     "the summed loss, not divided by the counted targets"),
    ("05.6.4", "borrowed", *_BORROWED),
    ("05.6.5", "swapped-return", "in that order", "(new_finished, tokens) returned in the wrong order"),
    ("05.6.5", "tuples-not-lists", "return lists, not tuples", "tuples instead of lists"),
    ("05.6.5", "mutates-finished", "changed the finished list", "the finished list given changed in place"),
    ("05.6.5", "pad-finishes", "only eos finishes a row", "a row that samples the pad id taken as finished"),
    ("05.6.5", "finished-row-appends-token", "appends its eos: [7, 5, 2]",
     "a finished row appends its sampled token"),
    ("05.6.5", "finished-again-only-on-eos", "stays finished",
     "a finished row counted as finished only on EOS"),
    ("05.6.5", "eos-replaced-by-pad", "appends its eos: [7, 0, 0]", "EOS replaced by pad"),
    ("05.6.5", "numpy-bools", "numpy's bool is not python's bool",
     "NumPy bools instead of Python bools"),
    ("05.6.5", "numpy-array", "a numpy array is not a list", "a NumPy array of flags instead of a list"),
    ("05.6.5", "tensor-flags", "bool tensors are not python bools",
     "torch bool tensors instead of Python bools"),
    ("05.6.5", "flags-not-bools", "holds python bools", "finished flags that are not Python bools"),
    ("05.7.1", "numpy-scalar", "not python's float", "a NumPy scalar (np.float64) instead of Python's float"),
    ("05.7.1", "over-distinct-symbols", "not over the number of distinct symbols",
     "the counts divided by the number of distinct symbols instead of len(text)"),
    ("05.7.1", "minus-sign-missing", "the minus sign is missing",
     "the minus sign missing (a negative entropy)"),
    ("05.7.1", "bits-not-nats", "use the natural log", "log base 2 (bits) instead of the natural log (nats)"),
    ("05.7.1", "log-of-symbol-count", "weight each symbol's -ln p by its frequency",
     "the log of the number of distinct symbols (the frequencies ignored)"),
    ("05.7.2", "half-the-swap", "check both swapped digits",
     "checks one swapped digit only (c == b, not d == a)"),
    ("05.7.2", "digits-not-checked", "a and b are digits", "accepts symbols other than digits"),
    ("05.7.2", "symbols-not-checked", "must be +, = and +",
     "does not check the +, = and + between the digits"),
    ("05.7.2", "several-digits", "single digits only",
     "accepts numbers of several digits (a split on + and =)"),
    ("05.7.2", "strips-the-line", "do not strip the line",
     "strips the line (or a regular expression whose $ allows a final newline)"),
    ("05.7.2", "short-line-crashes", "not an indexerror",
     "an IndexError on a line shorter than 7 characters"),
    ("05.7.3", "tied-counted-twice", "counted twice", "the tied embedding and output head counted twice"),
    ("05.7.3", "transformer-only", "takes any module, not only a transformer",
     "right for the Transformer only (its tied weight removed by name)"),
    ("05.9.1", "tensor-not-list", "not a list: convert it with .tolist()", "a tensor instead of a list"),
    ("05.9.1", "list-of-tensors", "the list holds 0-d tensors", "a list of 0-d tensors instead of bools"),
    ("05.9.1", "one-answer-for-the-batch", "each row gets its own answer", "one answer for the whole batch"),
    ("05.9.1", "one-row-not-a-list", "a batch of one row",
     "a bool, not a list, for a batch of one row (squeeze())"),
    ("05.9.2", "never-dedents", "an indented method parses once dedented",
     "never dedents: an indented method is 'not code'"),
    ("05.9.2", "dedents-first", "as it stands before dedenting",
     "dedents first: a snippet that parses is 'needs context'"),
    ("05.9.2", "strip-not-dedent", "strip() only the first line's", "strip() instead of dedent"),
    ("05.9.2", "runs-the-snippet", "never run it", "runs the snippet instead of parsing it"),
    ("05.9.2", "judges-by-indentation", "its indentation alone does not make it code",
     "'needs context' for any indented snippet, without parsing it dedented"),
    ("05.9.3", "probability-not-log", "log_softmax, not softmax",
     "the probability instead of -log p (softmax, not log_softmax)"),
    ("05.9.3", "raw-logits", "raw logits are not log-probabilities",
     "the raw logits picked (no log_softmax)"),
    ("05.9.3", "likeliest-class", "most likely class",
     "the loss of each row's most likely class, not its target's"),
    ("05.9.3", "gathers-over-rows", "gathered over the rows",
     "gathered along the rows (dim=0), not the classes"),
    ("05.9.3", "every-target-per-row", "one entry per row",
     "N×N losses: every target's column picked in every row"),
    ("05.9.3", "squeezes-one-row", "squeeze() drops",
     "squeeze() instead of squeeze(-1): no axis left for one row"),
    ("05.9.3", "every-target-counted", "costs exactly 0.0", "every target counted (no ignore_index)"),
    ("05.9.3", "minus-sign-missing", "minus sign is missing", "the minus sign missing"),
    ("05.9.3", "softmax-over-rows", "over the rows instead of the classes",
     "the softmax over the rows, not the classes"),
    ("05.9.3", "picks-at-minus-100", "-100 is not a class", "picks at -100 before masking"),
    ("05.9.3", "mean-not-per-target", "one loss per target", "the mean instead of one loss per target"),
    ("05.9.3", "borrowed", *_BORROWED),
    ("05.10.1", "big-endian", "read big-endian", "d read big-endian (its bytes swapped)"),
    ("05.10.1", "high-nibble-not-shifted", "not shifted down",
     "the high nibbles masked with 0xF0, not shifted (>> 4)"),
    ("05.10.1", "signed-bytes", "as unsigned (uint8)", "the packed bytes read as signed (int8)"),
    ("05.10.1", "float16-arithmetic", "convert d and m to float32 first", "d·q + m computed in float16"),
    ("05.10.1", "nibble-order", "weights 0..15 from the low nibbles",
     "the nibbles in the wrong order (high first, or interleaved)"),
    ("05.10.1", "offset", "the minimum m is added to d·q",
     "the offset m subtracted or left out, or q - 8 (Q4_0's) instead of q"),
    ("05.10.1", "scale", "d scales q alone", "d and m swapped, or m scaled by d too"),
    ("05.10.1", "borrowed", "not allowed here",
     "calls a ready-made dequantisation (the course's or the gguf package's) "
     "instead of the learner's own code"),
    ("05.10.2", "labels-pre-shifted", "labels are input_ids, unshifted",
     "labels shifted by hand, then padded back to B×T"),
    ("05.10.2", "mask-one-early", "the mask starts one position early",
     "each row's last real token (EOS) masked too"),
    ("05.10.2", "padding-found-by-id", "found by position, not by id",
     "padding found by id: every end of turn hidden (pad = EOS)"),
    ("05.10.2", "padding-labelled-pad-id", "only the pad after it is -100",
     "padding labelled with the pad id instead of -100"),
    ("05.10.2", "labels-shifted", "labels unshifted", "the labels shifted by hand"),
    ("05.10.2", "changes-the-input", "changed the caller's lists", "pads the caller's lists in place"),
    ("05.10.2", "length-of-first-row", "pad every row to the longest row's length",
     "pads to the first row's length, not the longest"),
    ("05.10.2", "padding-side-or-value", "right padding, each row then pad_id",
     "left padding, or padded with 0 instead of the pad id"),
    ("05.10.3", "rope-positions-from-1", "the positions 1..end", "RoPE tables for the positions 1..end"),
    ("05.10.3", "cos-sin-swapped", "cos and sin swapped", "RoPE's cos and sin tables swapped"),
    ("05.10.3", "rope-accepts-odd-head-dim", "raise valueerror when it is odd",
     "RoPE tables built for an odd head_dim (no ValueError)"),
    ("05.10.3", "given-mask-ignored", "the given mask is ignored", "attention ignoring a given mask"),
    ("05.10.3", "bool-mask-added", "boolean mask added to the scores",
     "the boolean mask added to the scores as an additive float mask"),
    ("05.10.3", "block-changes-x", "changed x in place", "a decoder block that changes x in place"),
    ("05.10.3", "no-residual", "both residuals are missing", "a decoder block without its residual sums"),
    ("05.10.3", "mlp-norm-missing", "ffn_norm is never called", "a decoder block without ffn_norm"),
    ("05.10.3", "right-padding-at-0", "the padding set to 0", "the right padding set to position 0"),
    ("05.10.3", "cumsum-over-batch", "over the batch axis", "positions counted over the batch axis"),
    ("05.10.3", "rmsnorm-subtracts-mean", "a norm that subtracts the mean", "RMSNorm subtracting the mean"),
    ("05.10.3", "rmsnorm-bfloat16", "rmsnorm (section 05.2): output on x of shape (2, 7, 64), torch.bfloat16",
     "RMSNorm wrong in bfloat16 only (e.g. the weight applied before casting back)"),
    ("05.10.3", "half-split-rope", "half-split pairing", "the half-split RoPE pairing"),
    ("05.10.3", "tiled-groups", "[0, 1, 0, 1] grouping", "the [0, 1, 0, 1] grouping of K/V heads"),
    ("05.10.3", "no-scale", "without the 1/sqrt(d_h) scale", "attention without the 1/sqrt(d_h) scale"),
    ("05.10.3", "nan-on-masked-row", "gives nan; it must give zeros",
     "-inf masking: NaN on a fully masked row"),
    ("05.10.3", "post-norm", "it matches post-norm", "a post-norm block"),
    ("05.10.3", "decoder-block-differs", "decoder_block (section 05.5)",
     "the decoder block differs from tinyk's (an overwritten residual, for one)"),
    ("05.10.3", "positions-ignore-padding", "whatever the padding", "positions shifted by padding"),
    ("05.10.3", "causal-from-first-key", "aligned to the first query_len keys",
     "the mask aligned to the first T keys"),
    ("05.10.3", "unshifted-loss", "the unshifted loss", "the unshifted loss"),
    ("05.10.3", "rmsnorm-wrong-axis", "normalise over the last axis", "RMSNorm over the wrong axis"),
    ("05.10.3", "rope-exponent", "-2i/d_h", "the RoPE exponent i/d_h instead of 2i/d_h"),
    ("05.10.3", "mask-after-softmax", "after the softmax", "the mask applied after the softmax"),
    ("05.10.3", "scale-by-d", "1/d_h instead of 1/sqrt(d_h)",
     "the scores scaled by 1/d_h instead of 1/sqrt(d_h)"),
    ("05.10.3", "loss-denominator", "denominator",
     "the loss divided by the wrong count (ignored targets, or the first label, counted)"),
    ("05.10.3", "full-width-rope-tables", "one column per pair", "full-width RoPE tables (end × head_dim)"),
    ("05.10.3", "rmsnorm-eps-outside-sqrt", "eps added outside the square root",
     "RMSNorm's eps outside the square root"),
    ("05.10.3", "softmax-over-queries", "softmax over the queries", "the softmax over the queries (dim=-2)"),
    ("05.10.3", "scale-not-over-sqrt-d-h", "scale the scores by 1/sqrt(d_h)",
     "the scores multiplied by sqrt(d_h), or scaled by the width of all heads"),
    ("05.10.3", "sin-sign-swapped", "the sign of sin swapped",
     "RoPE turning the wrong way (the sign of sin swapped)"),
    ("05.10.3", "gate-on-up", "the gate on w3 instead of w1", "SwiGLU's gate on the up branch w3"),
    ("05.10.3", "positions-from-1", "the first real token is at position 0", "positions counted from 1"),
    ("05.10.3", "nan-when-nothing-counted", "must be 0.0, not nan", "the loss NaN when no target is counted"),
]

CATALOGUE: tuple[Mistake, ...] = tuple(Mistake(f"{exercise}:{name}", words, en)
                                       for exercise, name, words, en in _TABLE)
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
        raise KeyError(f"no catalogued mistake {mistake_id!r} (tinyk.learner.mistakes.CATALOGUE)") from None


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
