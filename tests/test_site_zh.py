"""The Chinese edition (``_build/html/zh``, built from ``locale/zh_CN`` by ``tinyk.translations``).

The checks of ``test_site.py`` and ``test_accessibility.py`` (offline loading, axe, a
phone's width) walk every page under ``_build/html``, this edition's included. Here:
every page's prose is Chinese, and so are the comments of the code shown; the glossary reads
Chinese first in pinyin order and every term link lands on its entry; each page links to the
same page in the other edition (in the browser, both ways), and a Chinese chapter page works
as an English one does: maths typeset, solution toggles, sliders, no request leaving the machine.
"""

from __future__ import annotations

import functools
import re

import pytest

from tests import sitecheck
from tests.test_browser import (  # noqa: F401  (fixtures)
    SHOTS,
    browser,
    expected_hints,
    expected_sliders,
    expected_solutions,
    page,
    site_url,
)
from tinyk.courseware import checkout

pytestmark = [pytest.mark.site, pytest.mark.xdist_group("site-zh")]
HTML = checkout.ROOT / "_build" / "html"
ZH = HTML / "zh"
_CJK = re.compile(r"[\u3400-\u9fff]")
_LATIN_WORD = re.compile(r"[A-Za-z]{2,}")


def _prose(path) -> str:
    """A page's visible article text without code, outputs and maths: what a reader reads."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
    main = soup.find("main") or soup
    for tag in main(["script", "style", "pre", "code", "math", "nav", "header", "footer"]):
        tag.decompose()
    for tag in main.select(".math, .cell_output, .output, .tinyk-slider, .headerlink, .toctree-wrapper,"
                           " .citation-list"):  # a bibliography lists papers by their own titles
        tag.decompose()
    return main.get_text(" ")


def _chinese_share(text: str) -> float:
    """Chinese characters against Chinese characters plus Latin words."""
    cjk, latin = len(_CJK.findall(text)), len(_LATIN_WORD.findall(text))
    return cjk / max(1, cjk + latin)


def _pages():
    return sorted(p for p in ZH.rglob("*.html") if "_static" not in p.parts and "_sources" not in p.parts
                  and p.name not in ("genindex.html", "search.html", "index.html"))


PAGES_AT_LEAST = 16  # what _pages finds: the book's pages but the index, the general index and search


def test_the_chinese_edition_has_every_page_of_the_english_one():
    english = {p.relative_to(HTML).as_posix() for p in HTML.rglob("*.html")
               if p.relative_to(HTML).parts[0] not in ("zh", "_static", "_sources")}
    chinese = {p.relative_to(ZH).as_posix() for p in ZH.rglob("*.html")
               if p.relative_to(ZH).parts[0] not in ("_static", "_sources")}
    assert english and chinese == english


def test_every_page_of_the_chinese_edition_is_mostly_chinese():
    pages = _pages()
    assert len(pages) >= PAGES_AT_LEAST
    shares = {p.relative_to(ZH).as_posix(): _chinese_share(_prose(p)) for p in pages}
    latin = {name: round(share, 2) for name, share in shares.items() if share < 0.6}
    assert latin == {}, f"pages whose prose is not mostly Chinese: {latin}"
    # The English edition is not: the measure tells the two apart.
    assert _chinese_share(_prose(HTML / "notebooks" / "05_2_rmsnorm.html")) < 0.1


def _figures(path) -> list[tuple[str, str]]:
    """(src, alt) of every image in a page's article: output figures and slider frames."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
    return [(img.get("src", ""), img.get("alt", "")) for img in (soup.find("main") or soup).select("img")
            if "_static" not in img.get("src", "")]


def test_every_figure_of_the_chinese_edition_is_drawn_and_described_in_chinese():
    """Figures are drawn in both languages in the one run of each notebook: the Chinese
    page's figures are other images than the English page's, and their alt texts are
    Chinese (tinyk.courseware.figure_text)."""
    counted = 0
    pages = _pages()
    assert len(pages) >= PAGES_AT_LEAST
    for path in pages:
        rel = path.relative_to(ZH).as_posix()
        chinese, english = _figures(path), _figures(HTML / rel)
        assert len(chinese) == len(english), f"{rel}: {len(chinese)} figures against {len(english)}"
        counted += len(chinese)
        same = {src for src, _ in chinese} & {src for src, _ in english}
        assert not same, f"{rel}: {len(same)} figure(s) identical to the English page's"
        english_alt = [alt[:60] for _, alt in chinese if _chinese_share(alt) < 0.5]
        assert not english_alt, f"{rel}: alt text not in Chinese: {english_alt[:3]}"
    assert counted >= 25, f"only {counted} figures and slider frames on the Chinese pages"


def test_no_figure_was_drawn_with_a_missing_glyph():
    """matplotlib warns on stderr for a character its fonts lack (the Chinese drawing would
    show a box there): no executed notebook in the book's cache has such a warning."""
    executed = sorted((checkout.ROOT / "_build" / ".jupyter_cache" / "executed").glob("*/*.ipynb"))
    assert len(executed) >= 9, "the book's execution cache is missing: run make book"
    for path in executed:
        text = path.read_text(encoding="utf-8")
        assert "missing from font" not in text and "findfont" not in text, path


def test_every_slider_label_and_calculator_of_the_chinese_edition_is_chinese():
    from bs4 import BeautifulSoup

    soups = {path: BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser") for path in _pages()}
    blocks = [(path, block) for path, soup in soups.items() for block in soup.select(".tinyk-slider")]
    assert len(blocks) >= 7
    for path, block in blocks:
        labels = [str(label.find(string=True, recursive=False) or "").strip()  # not the value
                  for label in block.select(".tinyk-slider-control")]
        # Words are translated; a symbol ("ε") or an identifier ("dtype") is not.
        words = [label for label in labels if len(re.findall(r"\b[A-Za-z]{2,}\b", label)) >= 2]
        assert all(_CJK.search(label) for label in words), f"{path.name}: slider labels {labels}"
        frames = [frame.get_text(" ") for frame in block.select(".tinyk-frame")]
        shown = [text for text in frames if _LATIN_WORD.search(text)]  # calculators' HTML
        assert all(_CJK.search(text) for text in shown), f"{path.name}: English frame: {shown[0][:80]}"


def test_pages_say_their_language_and_link_to_the_other_edition():
    pages = _pages()
    assert len(pages) >= PAGES_AT_LEAST
    for path in pages:
        text = path.read_text(encoding="utf-8")
        assert '<html lang="zh-CN"' in text, path
        rel = path.relative_to(ZH).as_posix()
        back = "../" * rel.count("/") + "../" + rel
        assert f'href="{back}" hreflang="en"' in text, f"{rel}: no link to the English page"
        english = (HTML / rel).read_text(encoding="utf-8")
        assert '<html lang="en"' in english
        assert f'href="{"../" * rel.count("/")}zh/{rel}" hreflang="zh-CN"' in english, rel


def test_navigation_captions_are_chinese():
    text = (ZH / "notebooks" / "05_2_rmsnorm.html").read_text(encoding="utf-8")
    captions = re.findall(r'<span class="caption-text">([^<]+)</span>', text)
    assert len(captions) == 2 and all(_CJK.search(c) for c in captions), captions


def test_glossary_terms_and_citations_resolve_in_chinese():
    glossary = sitecheck.visible_text(ZH / "book" / "glossary.html")
    assert "键值缓存（KV cache）" in glossary and "KV cache (键值缓存)" not in glossary
    rope = (ZH / "notebooks" / "05_3_rope.html").read_text(encoding="utf-8")
    assert 'href="../book/glossary.html#term-KV-cache"' in rope
    assert "references.html#" in rope  # the citation of RoFormer


def _soup(path):
    from bs4 import BeautifulSoup

    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


def _bold_markers(html_text: str) -> list[str]:
    """The text around each ``**`` a page shows outside code, maths and scripts: a bold that
    CommonMark's flanking rule did not open or close (``**发布。**这些``), shown as it is."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html_text, "html.parser")
    for tag in soup(["script", "style", "pre", "code", "math"]):
        tag.decompose()
    for tag in soup.select(".math"):
        tag.decompose()
    text = soup.get_text(" ")
    return list(dict.fromkeys(text[max(0, m.start() - 20):m.end() + 20] for m in re.finditer(r"\*\*", text)))


_TOKEN = re.compile(r"(?<![A-Za-z_])token(?![A-Za-z_])")


def _token_glosses(path) -> tuple[str, int]:
    """Where a Chinese page's prose first says token (the words after it), and how many times
    it writes the gloss token（词元）, as the page shows them (the glossary in pinyin order)."""
    soup = _soup(path)
    article = soup.select_one("article") or soup
    for tag in article(["pre", "code", "script", "style", "math"]):
        tag.decompose()
    for tag in article.select(".math, .cell_output, .tinyk-playground, .tinyk-chat"):
        tag.decompose()
    text = " ".join(article.get_text().split())
    first = _TOKEN.search(text)
    return (text[first.start():first.start() + 9] if first else ""), text.count("token（词元）")


def test_each_chinese_page_glosses_token_where_a_reader_first_meets_it():
    """token（词元）, once, at the first token of each page as it is shown (tinyk.translations.terms
    checks the catalogues in the page's order; this is the built page: the glossary sorted, the
    map's words)."""
    pages = _pages()
    assert len(pages) >= PAGES_AT_LEAST
    found = {p.relative_to(ZH).as_posix(): _token_glosses(p) for p in pages}
    wrong = {name: first for name, (first, count) in found.items()
             if first and (not first.startswith("token（词元）") or count != 1)}
    assert wrong == {}, wrong
    assert sum(1 for first, _ in found.values() if first) >= 12, found
    english = _token_glosses(HTML / "book" / "playground.html")  # the English page: no gloss, found as wrong
    assert english[0].startswith("token") and not english[0].startswith("token（词元）") and english[1] == 0


def test_no_bold_marker_shows_on_a_chinese_page():
    """Every bold of the Chinese pages rendered (tinyk.translations.messages checks each
    message as the book's parser reads it; this is the built site)."""
    pages = sorted(p for p in ZH.rglob("*.html") if "_static" not in p.parts and "_sources" not in p.parts)
    assert len(pages) >= PAGES_AT_LEAST
    left = {p.relative_to(ZH).as_posix(): found for p in pages
            if (found := _bold_markers(p.read_text(encoding="utf-8")))}
    assert left == {}, left
    instructors = (ZH / "book" / "instructors.html").read_text(encoding="utf-8")
    assert "<strong>发布</strong>。这些" in instructors
    # the measure finds a marker in prose and none in code
    assert _bold_markers("<main><p>**发布。**这些</p><code>2**30</code></main>") == ["**发布。**这些"]


_CELL_SOURCE = re.compile(r'<div class="cell_input[^"]*">.*?<pre>(.*?)</pre>', re.S)


def _code_shown(path) -> list[str]:
    """The source of each code cell a chapter page shows, as a reader reads it (Pygments'
    spans out, entities decoded)."""
    import html

    text = path.read_text(encoding="utf-8")
    return [html.unescape(re.sub(r"<[^>]+>", "", pre)) for pre in _CELL_SOURCE.findall(text)]


def _comment_problems(source) -> tuple[list[str], int]:
    """What is wrong with the code a chapter page shows in Chinese, and how many comments and
    docstrings were compared (test_chinese_chapter_pages_show_the_code_that_ran_...)."""
    from tinyk.courseware.chinese_notebooks import (
        code_catalogue_path,
        code_messages,
        load_messages,
        same_code,
    )

    rel = f"notebooks/{source.stem}.html"
    chinese, english = _code_shown(ZH / rel), _code_shown(HTML / rel)
    problems = [] if len(chinese) == len(english) > 0 else [
        f"{rel}: {len(chinese)} code cells on the Chinese page, {len(english)} on the English one"]
    words = load_messages(code_catalogue_path(checkout.ROOT, source.stem), code=True)
    count = 0
    for zh, en in zip(chinese, english, strict=False):  # a count that differs is named above
        if not same_code(zh, en):
            problems.append(f"{rel}: the Chinese code differs: {zh[:80]!r}")
        for msgid, kind in code_messages(en):
            if kind not in ("comment", "docstring"):
                continue
            count += 1
            first = words.get(msgid, "").split("\n")[0]
            if not first or first not in zh or msgid.split("\n")[0] not in en:
                problems.append(f"{rel}: {kind} not shown in Chinese: {msgid[:60]!r}")
            elif kind == "comment" and first != msgid and f"# {msgid}" in zh:
                problems.append(f"{rel}: English comment left: {msgid[:60]!r}")
    return problems, count


def test_chinese_chapter_pages_show_the_code_that_ran_with_chinese_comments():
    """Every comment and docstring of the code a chapter page shows (solutions included) is the
    catalogue's Chinese on the Chinese page and English on the English one; the code itself,
    string literals aside, is the English page's token for token (tinyk.translations.pages)."""
    results = {source.stem: _comment_problems(source) for source in checkout.notebook_paths()}
    assert len(results) == len(checkout.notebook_paths()) >= 9
    assert [p for problems, _ in results.values() for p in problems] == []
    counts = {stem: count for stem, (_, count) in results.items()}
    assert sum(counts.values()) >= 150 and all(counts.values()), counts


def _tokens(code: str) -> list[tuple[int, str]]:
    """A cell's Python tokens (kind, text), string literals with their words; a cell Python's
    tokenizer cannot read (an IPython magic) is its lines, stripped."""
    import io
    import tokenize

    try:
        return [(t.type, t.string) for t in tokenize.generate_tokens(io.StringIO(code).readline)
                if t.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                                  tokenize.ENDMARKER)]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return [(0, line.strip()) for line in code.strip().split("\n")]


def _student_code(folder, stem: str) -> list[str]:
    import json

    from tinyk.courseware.exercises import source_text

    nb = json.loads((folder / f"{stem}.ipynb").read_text(encoding="utf-8"))
    return [source_text(cell) for cell in nb["cells"] if cell["cell_type"] == "code"]


def _colab_problems(stem: str) -> tuple[list[str], int]:
    """The code cells of a chapter page that Colab's Chinese notebook has too (the English
    page's cell is a cell of the English student version) and that the Chinese page does not
    show token for token as the Chinese student version has it; and how many were compared."""
    rel = f"notebooks/{stem}.html"
    chinese, english = _code_shown(ZH / rel), _code_shown(HTML / rel)
    en_student = _student_code(checkout.ROOT / "student", stem)
    zh_student = _student_code(checkout.ROOT / "student" / "zh", stem)
    assert len(en_student) == len(zh_student)
    problems, count = [], 0
    for shown_en, shown_zh in zip(english, chinese, strict=True):
        same = [j for j, code in enumerate(en_student) if _tokens(code) == _tokens(shown_en)]
        if not same:  # a solution, a cell the student version changes: not in Colab as shown
            continue
        count += 1
        if _tokens(shown_zh) != _tokens(zh_student[same[0]]):
            problems.append(f"{rel}: {shown_zh[:70]!r} is in Colab {zh_student[same[0]][:70]!r}")
    return problems, count


def test_chinese_pages_show_each_code_cell_as_colabs_chinese_notebook_has_it():
    """Every code cell of a Chinese chapter page that the student notebooks have too reads
    token for token as in the Chinese student notebook that its Colab button opens: the same
    comments, docstrings, printed labels and visible tests' messages, in Chinese (one
    catalogue and one function for both: tinyk.translations.pages)."""
    results = {source.stem: _colab_problems(source.stem) for source in checkout.notebook_paths()}
    assert len(results) == len(checkout.notebook_paths()) >= 9
    assert [p for problems, _ in results.values() for p in problems] == []
    counts = {stem: count for stem, (_, count) in results.items()}
    assert sum(counts.values()) >= 100 and all(counts.values()), counts
    gqa = "\n".join(_code_shown(ZH / "notebooks" / "05_4_gqa.html"))
    assert "每层 K 和 V 投影" in gqa and "K and V projections" not in gqa  # a printed label


def _pinyin(text: str) -> list[str]:
    """The syllables of a headword with their tones (``can2``), Latin words as they are."""
    from pypinyin import Style, lazy_pinyin

    parts = lazy_pinyin(text.split("\uff08")[0], style=Style.TONE3, neutral_tone_with_five=True)
    return [p.strip().lower() for p in parts if re.search("[A-Za-z]", p)]


def _glossary(edition) -> list[tuple[str, str]]:
    soup = _soup(edition / "book" / "glossary.html")
    for link in soup.select("dl.glossary dt a.headerlink"):
        link.decompose()
    return [(dt["id"], dt.get_text().strip()) for dt in soup.select("dl.glossary > dt")]


def _chinese_first(english: str) -> str:
    """The Chinese headword of the English one, "Batch (批量)": "批量（batch）" (a plain word's
    capital goes, a name's stays: "KV cache", "SwiGLU"); a term kept in English, lower case;
    a Chinese that holds the English already, alone ("SwiGLU 门控前馈网络"); two English names
    joined by a full-width comma, the abbreviation last ("均方根归一化（root mean square
    normalisation，RMSNorm）"), three or more by the enumeration comma ("（query、key、value）")."""
    en, _, zh = english.partition(" (")
    if not zh:
        return en.lower()
    if en in zh:
        return zh[:-1]
    names = [n[0].lower() + n[1:] if n.split()[0][1:].islower() else n for n in en.split(", ")]
    names.sort(key=lambda n: " " not in n and n[1:] != n[1:].lower())  # an abbreviation last
    return f"{zh[:-1]}\uff08{('、' if len(names) > 2 else '，').join(names)}\uff09"


def test_the_chinese_glossary_reads_chinese_first_in_pinyin_order():
    """“批量（batch）”: each headword of the Chinese glossary is its Chinese term, then the
    English one in full-width brackets (a term the Chinese prose keeps in English, token,
    stands alone), and the entries are in pinyin order, as a Chinese dictionary's."""
    english, chinese = dict(_glossary(HTML)), _glossary(ZH)
    assert len(chinese) == len(english) >= 26 and {i for i, _ in chinese} == set(english)
    assert dict(chinese) == {anchor: _chinese_first(headword) for anchor, headword in english.items()}
    assert {en for en in english.values() if " (" not in en} == {"Token", "Logits"}  # kept in English
    order = [headword for _, headword in chinese]
    assert order == sorted(order, key=_pinyin), order
    assert order[:3] == ["残差连接（residual connection）", "残差流（residual stream）", "层归一化（layer "
                         "normalisation，LayerNorm）"]
    assert [h for h in order if h.startswith(("提示词", "token", "贪心", "logits"))] == [
        "logits", "贪心解码（greedy decoding）", "提示词（prompt）", "token"]


@pytest.mark.parametrize("edition", ["en", "zh"])
def test_every_glossary_link_lands_on_its_entry(edition):
    root = HTML if edition == "en" else ZH
    entries = {anchor for anchor, _ in _glossary(root)}
    paths = sorted(p for p in root.rglob("*.html")
                   if not {"_static", "_sources", "zh"} & set(p.relative_to(root).parts))
    links = [(path.relative_to(root).as_posix(), anchor) for path in paths for anchor in
             re.findall(r'href="[^"#]*glossary\.html#([^"]+)"', path.read_text(encoding="utf-8"))]
    assert len(links) >= 25
    lost = [(path, anchor) for path, anchor in links if anchor not in entries]
    assert lost == [], lost


def test_language_switch_works_both_ways_in_the_browser(page, site_url):  # noqa: F811
    page.goto(f"{site_url}/notebooks/05_2_rmsnorm.html", wait_until="networkidle")
    page.locator("a.tinyk-language").click()
    page.wait_for_url("**/zh/notebooks/05_2_rmsnorm.html")
    assert page.locator("html").get_attribute("lang") == "zh-CN"
    assert "均方根" in page.inner_text("main") or "RMSNorm" in page.inner_text("h1")
    page.locator("a.tinyk-language").click()
    page.wait_for_url(re.compile(r".*/notebooks/05_2_rmsnorm\.html$"))
    assert "/zh/" not in page.url and page.locator("html").get_attribute("lang") == "en"
    assert page.external_requests == [] and page.console_errors == []


@pytest.mark.parametrize("path", ["notebooks/05_2_rmsnorm.html", "notebooks/05_4_gqa.html"])
def test_a_chinese_chapter_page_in_a_real_browser(page, site_url, path):  # noqa: F811
    page.goto(f"{site_url}/zh/{path}", wait_until="networkidle")
    page.wait_for_selector("mjx-container", state="attached", timeout=15_000)
    assert page.locator("mjx-container").count() >= page.locator("div.math, span.math").count() > 0
    shots = SHOTS.parent / "zh"
    shots.mkdir(parents=True, exist_ok=True)
    shot = shots / path.split("/")[-1].replace(".html", ".jpg")
    page.screenshot(path=str(shot), full_page=True, type="jpeg", quality=80)  # as test_browser's

    toggles = page.locator("details.hide.above-input")
    labels = [toggles.nth(i).locator("summary").inner_text() for i in range(toggles.count())]
    assert sum("显示答案" in label for label in labels) == expected_solutions(path) > 0
    assert all("显示答案" in label or "显示代码" in label for label in labels), labels
    first = toggles.first
    first.locator("summary").click()
    assert first.get_attribute("open") is not None
    hints = page.locator("details.sd-dropdown")
    assert hints.count() == expected_hints(path) > 0
    titles = [hints.nth(i).locator("summary").inner_text() for i in range(hints.count())]
    assert all(t.startswith("提示") for t in titles), titles
    hints.first.locator("summary").click()
    assert hints.first.get_attribute("open") is not None

    sliders = page.locator(".tinyk-slider")
    assert sliders.count() == expected_sliders(path) > 0
    for i in range(sliders.count()):
        frames = sliders.nth(i).locator(".tinyk-slider-frames")
        before = frames.screenshot()
        control = sliders.nth(i).locator("input[type=range]").first
        start = control.input_value()
        control.focus()
        page.keyboard.press("ArrowRight" if int(start) < int(control.get_attribute("max")) else "ArrowLeft")
        assert frames.screenshot() != before, f"slider {i} on zh/{path} did not change its figure"
    assert page.external_requests == [] and page.console_errors == []


# Latin-letter words the Chinese pages' interface may keep: key names, the course's and the
# services' names, the language switch's own label, file types of the download menu.
INTERFACE_ALLOWED = {"Ctrl", "K", "tinyk", "English", "EN", "Colab", ".pdf", ".ipynb", ".md", "GitHub"}
_INTERFACE_ATTRIBUTES = ("title", "aria-label", "placeholder", "alt", "data-bs-title")


def _english_interface(path) -> list[str]:
    """The interface of a Chinese page still in English: text outside the article's content,
    and the attributes a reader hears or sees as tooltips (outside the article, and the
    headings' link titles inside it); what the page's own prose says is _prose's concern."""
    from bs4 import BeautifulSoup, Comment, Doctype

    soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
    for tag in soup(["script", "style"]):
        tag.decompose()
    title = soup.title.get_text() if soup.title else None  # None: the root's redirect, no page
    found = [] if title is None or _CJK.search(title) else [f"<title>: {title}"]
    found += [f"title: {a['title']}" for a in soup.select("a.headerlink[title]")
              if _LATIN_WORD.search(a["title"]) and not _CJK.search(a["title"])]
    article = soup.select_one("article.bd-article")
    if article is not None:
        article.decompose()
    for text in soup.find_all(string=True):
        words = text.strip()
        if isinstance(text, (Comment, Doctype)) or not _LATIN_WORD.search(words) or _CJK.search(words):
            continue
        if text.find_parent("code") or words.startswith("\\("):  # code and maths (a heading's, in a menu)
            continue
        if words not in INTERFACE_ALLOWED:
            found.append(f"text: {words[:60]}")
    for tag in soup.find_all(True):
        for name in _INTERFACE_ATTRIBUTES:
            value = (tag.get(name) or "").strip()
            if _LATIN_WORD.search(value) and not _CJK.search(value) and value not in INTERFACE_ALLOWED:
                found.append(f"{name}: {value[:60]}")
    return sorted(set(found))


def test_no_interface_text_is_left_in_english_on_a_chinese_page():
    """The theme's labels, tooltips, search box, title and footer of every Chinese page are
    Chinese (locale/zh_CN/interface.po), and "打印" is the mainland's word."""
    pages = sorted(p for p in ZH.rglob("*.html") if "_static" not in p.parts and "_sources" not in p.parts)
    assert len(pages) >= 17
    left = {p.relative_to(ZH).as_posix(): found for p in pages if (found := _english_interface(p))}
    assert left == {}, left
    assert not any("列印" in p.read_text(encoding="utf-8") for p in pages)
    chapter = (ZH / "notebooks" / "05_3_rope.html").read_text(encoding="utf-8")
    assert "打印成 PDF" in chapter and "搜索本书……" in chapter and "tinyk 课程作者" in chapter
    # the footer: the theme's "By" is 作者：, whose colon carries its own space (tinyk_book._AUTHOR_ZH)
    # (every page but index.html, a redirect to the intro)
    author = re.compile(r'<p class="component-author">\s*(.*?)\s*</p>', re.S)
    footers = [m[1] for p in pages if (m := author.search(p.read_text(encoding="utf-8")))]
    assert len(footers) == len(pages) - 1 >= 17 and set(footers) == {"作者：tinyk 课程作者"}


# Each query of the Chinese search page, and the page its results must include: the words a
# Chinese reader types (whole course terms, and words that are part of one: 注意力 within
# 分组查询注意力), which Sphinx's Chinese index holds only as jieba cuts them (tinyk.translations.builds).
SEARCHES = {"注意力": "notebooks/05_4_gqa.html", "旋转": "notebooks/05_3_rope.html",
            "掩码": "notebooks/05_6_head_protocol.html", "键值缓存": "notebooks/05_4_gqa.html",
            "分组查询注意力": "notebooks/05_4_gqa.html", "旋转位置编码": "notebooks/05_3_rope.html"}


def _search(page, url: str) -> list[str]:  # noqa: F811  (the fixture's page)
    """The pages (in their order, anchors dropped, once each) that the search page at ``url``
    lists once Sphinx's search script has finished (its summary is written last)."""
    page.goto(url, wait_until="domcontentloaded")
    page.wait_for_function("() => document.querySelector('#search-results .search-summary')?.innerText",
                           timeout=30_000)
    hrefs = page.eval_on_selector_all("#search-results ul.search li > a",
                                      "links => links.map(a => a.getAttribute('href'))")
    return list(dict.fromkeys(href.split("#")[0] for href in hrefs))


_ARTICLE = re.compile(r'<article class="bd-article"[^>]*>(.*?)</article>', re.S)


@functools.cache
def _article(path) -> str:
    """A page's article text, code and outputs included (what Sphinx indexes), without the
    navigation (which names every page)."""
    import html

    found = _ARTICLE.search(path.read_text(encoding="utf-8"))
    return html.unescape(re.sub(r"<[^>]+>", " ", found[1])) if found else ""


def test_the_chinese_search_finds_the_course_terms(page, site_url):  # noqa: F811
    """Searching the Chinese site for a Chinese word lists the page about it among the first
    three, and only pages that have the word; the English site's search still finds an
    English word."""
    from urllib.parse import quote

    for query, expected in SEARCHES.items():
        found = _search(page, f"{site_url}/zh/search.html?q={quote(query)}")
        assert expected in found[:3], f"{query}: {expected} not among the first results {found}"
        without = [p for p in found if query not in _article(ZH / p)]
        assert without == [], f"{query}: results without the word: {without}"
    english = _search(page, f"{site_url}/search.html?q=attention")
    assert "notebooks/05_4_gqa.html" in english, english
    assert all("attention" in _article(HTML / p).lower() for p in english), english
    assert page.external_requests == [] and page.console_errors == []


# The theme's download links (the source's, and a notebook's where myst-nb wrote one), as it
# writes them: the address first, then the classes.
_DOWNLOADS = re.compile(r'<a href="([^"]+)"[^>]*\sclass="[^"]*\bbtn-download-(?:source|notebook)-button\b')


def _downloads(address: str, edition) -> dict[str, tuple[str, bytes]]:
    """Each page of an edition (the general index and search aside): the address its
    download button links to, relative to the edition's root, and what the site serves there."""
    from urllib.parse import urljoin
    from urllib.request import urlopen

    base = f"{address}/" if edition == HTML else f"{address}/zh/"
    found = {}
    skipped = {"_static", "_sources", "zh", "genindex.html", "search.html"}
    for path in sorted(p for p in edition.rglob("*.html") if not skipped & set(p.relative_to(edition).parts)):
        rel = path.relative_to(edition).as_posix()
        links = _DOWNLOADS.findall(path.read_text(encoding="utf-8"))
        if rel == "index.html" and not links:  # the root's redirect to the first page
            continue
        assert len(links) == 1, f"{rel}: download links {links}"
        url = urljoin(base + rel, links[0])
        assert url.startswith(base + "_sources/"), f"{rel}: {url}"
        with urlopen(url) as reply:
            found[rel] = (url[len(base):], reply.read())
    return found


def _english_left(download: str, docname: str) -> tuple[list[str], int]:
    """The English prose of a page (each translated message of its catalogue with four words
    or more that its source holds: not the table of contents' captions, which are among the
    root page's messages) still in its download, and how many such messages there are: their
    translations must be there instead."""
    from tinyk.courseware.chinese_notebooks import load_messages
    from tinyk.translations.sources import page_catalogue

    text = " ".join(download.split())
    source = " ".join((checkout.ROOT / f"{docname}.md").read_text(encoding="utf-8").split())
    messages = {en: zh for en, zh in load_messages(page_catalogue(checkout.ROOT, docname)).items()
                if en != zh and len(_LATIN_WORD.findall(en)) >= 4 and en in source}
    return [en[:70] for en, zh in messages.items() if en in text or zh not in text], len(messages)


def test_every_download_button_gives_the_page_in_its_edition_s_language(site_url):  # noqa: F811
    """The download button of every page, followed: the English edition serves a Markdown
    page's own source and a chapter's English student notebook; the Chinese edition serves
    the Chinese student notebook and the Markdown page in Chinese, every paragraph translated."""
    english, chinese = _downloads(site_url, HTML), _downloads(site_url, ZH)
    assert set(english) == set(chinese) and len(chinese) >= PAGES_AT_LEAST
    for rel, (where, _) in chinese.items():
        assert where == english[rel][0], f"{rel}: {where} against {english[rel][0]}"
    notebooks = sorted(rel for rel, (where, _) in chinese.items() if where.endswith(".ipynb"))
    pages = sorted(rel for rel in chinese if rel not in notebooks)
    assert len(notebooks) == len(checkout.notebook_paths()) and len(pages) >= 5, (notebooks, pages)
    for rel in notebooks:
        source = checkout.ROOT / f"{rel.removesuffix('.html')}.ipynb"
        body, en_body = chinese[rel][1], english[rel][1]
        assert en_body == checkout.student_path(source, language="en").read_bytes(), rel
        assert body == checkout.student_path(source, language="zh").read_bytes(), rel
        assert _chinese_share(body.decode()) > 0.3 > _chinese_share(en_body.decode()), rel
    counted = 0
    for rel in pages:
        docname = rel.removesuffix(".html")
        (where, body), en_body = chinese[rel], english[rel][1]
        assert where == f"_sources/{docname}.md", where
        assert en_body == (checkout.ROOT / f"{docname}.md").read_bytes(), rel
        left, messages = _english_left(body.decode(), docname)
        assert left == [], f"{rel}: its Chinese download keeps English paragraphs: {left[:3]}"
        # The check sees English where it is: the English download fails it on every message.
        assert len(_english_left(en_body.decode(), docname)[0]) == messages, rel
        assert _CJK.search(body.decode()), rel
        counted += messages
    assert counted >= 100, f"only {counted} paragraphs compared"


# English a Chinese page may show, each with its reason: named proper nouns (a product's, a
# project's, a person's), and text that is a program's own, not the course's words. Besides
# these: code identifiers (inline code, a code cell's names and data), maths, the package code
# shown as it runs (each figure with its Chinese note), a term's English original in brackets
# after its Chinese (as zh.d2l.ai gives it), a program's own words quoted and followed by their
# Chinese gloss in brackets (the grader's statuses, Python's errors), a line Python or PyTorch
# prints followed by its Chinese gloss, and the messages the catalogues keep as they are, each
# with its reason there (a translator comment "kept: ...", in outputs.po and the code catalogues).
ALLOWED_ENGLISH = {
    "Hugging Face": "a company's name",
    "Google Colab": "a product's name",
    "Jupyter Book": "a tool's name",
    "ONNX Runtime Web": "a library's name",
    "Datawhale": "the upstream project's organisation",
    "Andrej Karpathy": "an author's name (nanoGPT, llama2.c)",
    "Zhang and Sennrich": "the authors of RMSNorm's paper, cited",
    "et al": "a citation's authors (Latin: and others)",
    "Python bool": "Python's type, by its name",
    "flash attention": "the name PyTorch's CPU kernel carries, quoted (05.4)",
    "scaled dot-product attention": "what SDPA stands for, followed by its Chinese term (05.4)",
    "The capital of France": "SmolLM2's own words, quoted as the model writes them (05.10)",
}
# Pages the test does not read, each with its reason.
NOT_READ = {
    "book/playground.html": "its words are its script's (tinyk-playground.js), checked by its own tests",
}
_ENGLISH_RUN = re.compile(r"(?<![\w./-])[A-Za-z][a-z'’-]+(?:[ \u00a0]+[A-Za-z][a-z'’-]+)+(?![\w(/=])")
_FIELD = re.compile(r"\{[^{}\n]*\}")  # an f-string's replacement field in a message: code
_QUOTED = re.compile(r"""(?<![A-Za-z])'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|<[^<>\n]*>""")


def _code_words(code: str) -> list[str]:
    """What a reader reads in a code cell: its comments, docstrings and messages (what a
    ``print`` writes, a test's or an error's message: tinyk.courseware.chinese_notebooks.code_texts);
    other strings are data or code (a token, a dictionary key, an expected value)."""
    from tinyk.courseware.chinese_notebooks import code_texts

    try:
        return [text.msgid for text in code_texts(code)]
    except SyntaxError:  # an IPython magic: its comment
        return [ln.partition("#")[2] for ln in code.split("\n")]


def _kept_messages() -> set[str]:
    """The messages of outputs.po and of the code catalogues translated as themselves, each with
    its reason (a translator comment ``kept: ...``)."""
    from tinyk.courseware.catalogues import outputs_catalogue, read_catalogue
    from tinyk.courseware.chinese_notebooks import CODE_FOLDER
    from tinyk.translations.outputs import KEPT

    code = checkout.ROOT / "locale" / "zh_CN" / "LC_MESSAGES" / CODE_FOLDER
    paths = [outputs_catalogue(), *sorted(code.glob("*.po"))]
    return {str(m.id) for path in paths for m in read_catalogue(path)
            if m.id and any(c.startswith(KEPT) for c in m.user_comments)}


# "（中文说明：", which follows a line that Python or PyTorch prints
_GLOSS = "\uff08\u4e2d\u6587\u8bf4\u660e\uff1a"
_QUOTED_GLOSSED = re.compile(r"\u201c[^\u201d]*\u201d(?=\s*\uff08)")  # “words”（gloss）
_ORIGINAL = re.compile(r"([\u3400-\u9fff])\s*\uff08[A-Za-z][^\uff08\uff09\u3400-\u9fff]*\uff09")


def _reader_text(path) -> list[str]:
    """The texts of a Chinese page a reader reads: prose, the words of code cells (comments,
    docstrings, messages), printed outputs without their quoted data; not maths, inline code,
    the navigation, the bibliography (papers by their titles) or the package code's figures."""
    from tinyk.courseware.figure_text import message_key

    kept = _kept_messages()
    soup = _soup(path)
    main = soup.find("main") or soup
    for tag in main(["script", "style", "math", "nav", "header", "footer"]):
        tag.decompose()
    for tag in main.select(".math, .headerlink, .toctree-wrapper, .citation-list, .citation, "
                           "figure.tinyk-source pre, .tinyk-playground"):
        tag.decompose()
    texts = []
    for pre in main.select("div.cell_input pre"):
        texts += [_QUOTED.sub(" ", _FIELD.sub(" ", text)) for text in _code_words(pre.get_text())
                  if text not in kept]
        pre.decompose()
    for pre in main.select("div.cell_output pre, div.output pre"):
        texts += [_QUOTED.sub(" ", ln) for ln in pre.get_text().split("\n")
                  if message_key(ln)[0] not in kept and _GLOSS not in ln]
        pre.decompose()
    for tag in main(["code", "pre"]):  # identifiers, commands, file names
        tag.decompose()
    texts.append(main.get_text(" "))
    return [_QUOTED_GLOSSED.sub(" ", _ORIGINAL.sub(r"\1 ", text)) for text in texts]


def _english_runs(path) -> list[str]:
    found = []
    for text in _reader_text(path):
        for allowed in ALLOWED_ENGLISH:
            text = text.replace(allowed, " ")
        found += [m[0] for m in _ENGLISH_RUN.finditer(text)]
    return sorted(set(found))


def test_no_english_is_left_where_a_chinese_reader_reads():
    """No run of two English words on any Chinese page, outside code identifiers, maths, the
    package code shown as it runs (with its Chinese note), the lines the printed outputs'
    catalogue keeps as printed (each with its reason, ``# kept:``) and ALLOWED_ENGLISH."""
    pages = [p for p in _pages() if p.relative_to(ZH).as_posix() not in NOT_READ]
    assert len(pages) >= PAGES_AT_LEAST - len(NOT_READ)
    left = {p.relative_to(ZH).as_posix(): found for p in pages if (found := _english_runs(p))}
    assert left == {}, left
    english = _english_runs(HTML / "notebooks" / "05_1_shapes.html")  # the measure finds English
    assert len(english) > 50, english
