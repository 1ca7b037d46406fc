"""The ``modelmap`` directive: a map of the decoder on the live page (both editions).

``:::{modelmap}`` writes the model's blocks in the order a token's vector goes through them
(embedding, N decoder layers of RMSNorm, attention with RoPE and GQA, residual, RMSNorm,
SwiGLU, residual, then the final norm and the vocabulary head) as nested lists that the book's
stylesheet draws as a diagram (``.tinyk-map`` in ``book/_static/tinyk.css``): a screen reader
reads it as the lists it is. Each block links to the course section that teaches it (a ``doc``
reference, so each edition links its own page) and to the panels of the page's playground
(``#tinyk-pg-1-…``) and SmolLM2's chat (``#tinyk-chat-1-…``) that show it, by the panels' ids
(``tinyk_playground``): every panel of the playground is linked from its block (a test checks
it). The words are :data:`WORDS`, written in Chinese in the Chinese edition
from ``locale/zh_CN/interface.po``, as the playground's are.
"""

from __future__ import annotations

from docutils import nodes
from sphinx import addnodes
from sphinx.util.docutils import SphinxDirective
from tinyk_playground import CHAT_LABELS, LABELS, PARTS, edition_words

# Each block: its name, what it does, the sections that teach it, and the panels that show it
# (the playground's parts, then the chat's); a layer's blocks are the second list.
BEFORE = [
    ("Token embedding", "each token's id picks a row of the embedding table",
     ["notebooks/05_1_shapes"], ["tokens"], ["tokens"]),
]
LAYER = [
    ("RMSNorm", "rescales each vector to a root mean square of 1, times a learned gain",
     ["notebooks/05_2_rmsnorm"], [], []),
    ("Attention with RoPE and GQA", "RoPE turns the queries and keys; the scores, scaled and masked, go "
     "through a softmax; query heads share K/V heads, kept in the KV cache",
     ["notebooks/05_3_rope", "notebooks/05_4_gqa"], ["attention", "steps", "rope", "cache"],
     ["attention", "rope", "cache"]),
    ("Residual", "adds the attention's output to its input", ["notebooks/05_5_swiglu_layer"], [], []),
    ("RMSNorm", "rescales each vector to a root mean square of 1, times a learned gain",
     ["notebooks/05_2_rmsnorm"], [], []),
    ("SwiGLU feed-forward", "a gated MLP, applied to each token on its own",
     ["notebooks/05_5_swiglu_layer"], [], []),
    # The residual stream's norm panel shows the stream after each layer: after this addition.
    ("Residual", "adds the feed-forward's output to its input", ["notebooks/05_5_swiglu_layer"], ["residual"],
     []),
]
AFTER = [
    ("RMSNorm", "the final norm, before the head", ["notebooks/05_2_rmsnorm"], [], []),
    ("Vocabulary head", "the embedding table again (tied weights): a logit per token of the vocabulary, "
     "then a softmax", ["notebooks/05_6_head_protocol"], ["next", "generate"], ["first", "reply"]),
]
SECTIONS = {"notebooks/05_1_shapes": "05.1", "notebooks/05_2_rmsnorm": "05.2", "notebooks/05_3_rope": "05.3",
            "notebooks/05_4_gqa": "05.4", "notebooks/05_5_swiglu_layer": "05.5",
            "notebooks/05_6_head_protocol": "05.6"}
# The chat's panels by their ids' ends (tinyk_playground.chat_html) and their captions' words.
CHAT_PANELS = {"tokens": CHAT_LABELS["prompt-tokens"], "reply": CHAT_LABELS["reply"],
               "first": CHAT_LABELS["first"], "attention": LABELS["attention"], "cache": LABELS["cache"],
               "rope": LABELS["rope"]}
MAP_WORDS = {
    "layers": "Decoder layer, repeated: 2 in the 05.7 model, 30 in SmolLM2",
    "taught": "Taught in",
    "tiny": "Shown live for the 05.7 model:",
    "chat": "for SmolLM2:",
    "section": "{section}",  # a section's link, by its number (as each edition names a section)
}
# The punctuation between the map's words: each edition's own (the Chinese's full-width).
PUNCTUATION = {"colon": ": ", "list": ", ", "next": "; ", "stop": ". ", "end": "."}
WORDS = (*{name for name, *_ in BEFORE + LAYER + AFTER}, *{text for _, text, *_ in BEFORE + LAYER + AFTER},
         *MAP_WORDS.values(), *PUNCTUATION.values(), *(LABELS[part] for part in PARTS),
         *CHAT_PANELS.values())


class ModelMapDirective(SphinxDirective):
    """``:::{modelmap}``: see the module."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        words = edition_words(self, WORDS)
        box = nodes.container(classes=["tinyk-map"])
        box["ids"].append("tinyk-map")
        outer = nodes.enumerated_list(classes=["tinyk-map-flow"])
        for block in BEFORE:
            outer += self._block(block, words)
        repeat = nodes.list_item(classes=["tinyk-map-layers"])
        repeat += nodes.paragraph("", "", nodes.strong("", words[MAP_WORDS["layers"]]),
                                  classes=["tinyk-map-repeat"])
        inner = nodes.enumerated_list(classes=["tinyk-map-flow"])
        for block in LAYER:
            inner += self._block(block, words)
        repeat += inner
        outer += repeat
        for block in AFTER:
            outer += self._block(block, words)
        box += outer
        return [box]

    def _block(self, block: tuple, words: dict[str, str]) -> nodes.list_item:
        name, text, sections, tiny, chat = block
        item = nodes.list_item(classes=["tinyk-map-block"])
        mark = {key: words[text] for key, text in PUNCTUATION.items()}
        item += nodes.paragraph("", "", nodes.strong("", words[name]),
                                nodes.Text(mark["colon"] + words[text]))
        links = nodes.paragraph(classes=["tinyk-map-links"])
        links += nodes.Text(_spaced(words[MAP_WORDS["taught"]]))
        for i, doc in enumerate(sections):
            if i:
                links += nodes.Text(mark["list"])
            number = words[MAP_WORDS["section"]].replace("{section}", SECTIONS[doc])
            ref = addnodes.pending_xref("", nodes.inline("", number), refdomain="std", reftype="doc",
                                        reftarget="/" + doc, refexplicit=True, refwarn=True)
            ref["refdoc"] = self.env.docname
            links += ref
        links += nodes.Text(mark["stop"])
        if tiny:
            links += nodes.Text(_spaced(words[MAP_WORDS["tiny"]]))
            self._panels(links, [(f"tinyk-pg-1-{part}", LABELS[part]) for part in tiny], words, mark["list"])
            if chat:  # a panel only the 05.7 model has (the residual stream's) ends the sentence here
                links += nodes.Text(mark["next"] + _spaced(words[MAP_WORDS["chat"]]))
                self._panels(links, [(f"tinyk-chat-1-{part}", CHAT_PANELS[part]) for part in chat], words,
                             mark["list"])
            links += nodes.Text(mark["end"])
        item += links
        return item

    @staticmethod
    def _panels(links: nodes.paragraph, panels: list[tuple[str, str]], words: dict[str, str],
                between: str) -> None:
        for i, (anchor, label) in enumerate(panels):
            if i:
                links += nodes.Text(between)
            links += nodes.reference("", words[label], refuri=f"#{anchor}", internal=True)


def _spaced(words: str) -> str:
    """``words`` and the space before what follows them: none after Chinese or a full-width
    mark, one after English ("Taught in 05.3")."""
    return words if "\u3000" <= words[-1:] <= "\u9fff" or "\uff00" <= words[-1:] <= "\uffef" else words + " "


def setup(app):
    app.add_directive("modelmap", ModelMapDirective)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
