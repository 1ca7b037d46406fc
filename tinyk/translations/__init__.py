"""The Chinese edition's translations: gettext catalogues of the book's own pages.

The English pages and notebooks are the only sources. Sphinx's gettext builder extracts
their prose (Markdown paragraphs, headings, list items, admonitions: never code or
outputs) into message catalogues, and ``locale/zh_CN/LC_MESSAGES/<page>.po`` holds the
translation of each message. The Chinese site is the same build with ``language`` set to
``zh_CN``. Commands (from the course checkout)::

    python -m tinyk.translations update   # extract the messages, add new ones to the .po files
    python -m tinyk.translations check    # exit 1 on an untranslated, stale or damaged message
    python -m tinyk.translations build    # the Chinese edition, into _build/html/zh

A translated message must keep what is not prose exactly as the English has it: inline
code, maths, link targets, citation keys and glossary targets (:func:`problems`). The
glossary's headwords are bilingual in the English (the English term, then the Chinese in
brackets) and every ``{term}`` reference names one; the Chinese edition writes each Chinese
first, its English in full-width brackets (:func:`tinyk.courseware.catalogues.chinese_headword`), in
pinyin order, with the English headword's anchor (:mod:`~tinyk.translations.pages`).

The words a learner reads in the code cells of the Chinese student notebooks (comments,
docstrings, test messages; :mod:`tinyk.courseware.chinese_notebooks`) are in one catalogue per notebook,
``locale/zh_CN/LC_MESSAGES/code/<stem>.po``, extracted from the English student versions by
``update`` and checked by ``check`` like the pages' (an f-string's placeholders, quotes and
escapes must come through as well). The same catalogues give the comments, docstrings and
messages of the code the Chinese site's chapter pages show, solutions included, translated as
the notebooks are (:mod:`~tinyk.translations.pages`); a printed table's translated lines are
spaced again by display width (:mod:`~tinyk.translations.tables`).

The words inside figures are not page prose: they are drawn when a notebook executes.
Their catalogue is ``tinyk/locale/figures_zh_CN.po`` (:mod:`tinyk.courseware.figure_text`); ``update``
adds the ones the last ``make book`` lacked, and ``check`` checks it like the others.

What the notebooks print is rendered from the same execution too, translated line by line on
the Chinese pages from ``locale/zh_CN/outputs.po`` (:mod:`~tinyk.translations.outputs`, which
says which lines have words); ``update`` adds the lines the execution cache holds and the
catalogue lacks, and ``check`` checks it like the figures'.

One English term has one Chinese term in every catalogue, the figures' included: ``check``
also fails on a message that renders a term of the term base (``locale/zh_CN/terms.toml``,
:mod:`tinyk.translations.terms`) another way, naming the catalogue, the message and the term.

The package, one job a module: :mod:`~tinyk.translations.messages` (what one translated
message must keep), :mod:`~tinyk.translations.checks` (every catalogue's messages checked, and no English
message left in a Chinese notebook's test cell),
:mod:`~tinyk.translations.updates` (the catalogues merged with the English, and a stale one
found), :mod:`~tinyk.translations.builds` (the Sphinx runs: extraction, the Chinese site),
:mod:`~tinyk.translations.outputs` (printed output translated, its messages found),
:mod:`~tinyk.translations.pages` (what the Chinese build changes in a page it
has read), :mod:`~tinyk.translations.sources` (the Markdown pages' downloads, in Chinese),
:mod:`~tinyk.translations.cli` (the commands), :mod:`~tinyk.translations.tables`,
:mod:`~tinyk.translations.source_figures`, :mod:`~tinyk.translations.sphinx_words`,
:mod:`~tinyk.translations.terms` (the term base), :mod:`~tinyk.translations.package_words` (what
the package's catalogue lacks) and :mod:`~tinyk.translations.package_catalogue` (the package's
own Chinese words: :func:`~tinyk.translations.package_catalogue.say`, the one small function
every layer, the model included, may import: it imports nothing of the package's but
:mod:`tinyk.environment`).

May import: the model core, :mod:`tinyk.courseware`, :mod:`tinyk.lessons`, :mod:`tinyk.learner`,
:mod:`tinyk.reports` and the package's words; never grading.
"""
