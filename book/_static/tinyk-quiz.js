// Concept checks (the book's quiz directive, tinyk/courseware/quiz.py): "Check answer" shows, in the quiz's
// live region, the verdict and the chosen choice's explanation. Everything is in the page: the
// words are the quiz's hidden elements (so the Chinese edition's are Chinese), nothing is fetched.
// Choosing another answer clears the verdict.
"use strict";
for (const quiz of document.querySelectorAll(".tinyk-quiz")) {
  const feedback = quiz.querySelector(".tinyk-quiz-feedback");
  const word = (key) => quiz.querySelector(`.tinyk-quiz-word[data-word="${key}"]`).textContent;
  // A verdict belongs to the choice it judged: another choice clears it until the next check.
  quiz.addEventListener("change", (event) => {
    if (event.target.matches("input[type=radio]") && feedback.childElementCount > 0) {
      feedback.replaceChildren();
      delete quiz.dataset.state;
    }
  });
  quiz.querySelector(".tinyk-quiz-check").addEventListener("click", () => {
    const chosen = quiz.querySelector("input[type=radio]:checked");
    const verdict = document.createElement("p");
    verdict.className = "tinyk-quiz-verdict";
    const shown = [verdict];
    if (chosen === null) {
      verdict.textContent = word("none");
      quiz.dataset.state = "none";
    } else {
      const right = chosen.dataset.correct === "true";
      const strong = document.createElement("strong");
      strong.textContent = word(right ? "right" : "wrong");
      verdict.append(strong);
      const explanation = chosen.closest(".tinyk-quiz-choice").querySelector(".tinyk-quiz-explanation");
      for (const block of explanation.children) {
        shown.push(block.cloneNode(true));
      }
      quiz.dataset.state = right ? "right" : "wrong";
    }
    feedback.replaceChildren(...shown);
  });
}
