// Formulas are out of the Tab order (MathJax's inTabOrder: false, in _config.yml), except a
// display formula wider than the column: it scrolls sideways in its own box (tinyk.css), and a
// reader without a mouse needs to reach it to scroll it. Checked again when the window's width
// changes, which changes which formulas are too wide.
"use strict";
(() => {
  function reachable() {
    for (const formula of document.querySelectorAll('mjx-container[display="true"]')) {
      formula.tabIndex = formula.scrollWidth > formula.clientWidth + 1 ? 0 : -1;
    }
  }
  let timer = null;
  window.addEventListener("resize", () => {
    clearTimeout(timer);
    timer = setTimeout(reachable, 200);
  });
  window.addEventListener("load", () => window.MathJax?.startup?.promise?.then(reachable));
})();
