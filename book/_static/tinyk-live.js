// The live page's behaviour on a phone-sized screen, beside tinyk-playground.js (which runs the
// models): nothing heavier than the page is fetched there until the reader asks for it, the chat's
// answer is shown in view under its form, and the chat template's tokens wait in a closed box.
"use strict";
(() => {
  // A phone held either way: the width of a phone upright, or the height of one on its side.
  const PHONE = "(max-width: 600px), (max-height: 500px)";
  const phone = () => window.matchMedia !== undefined && window.matchMedia(PHONE).matches;
  const fill = (text, values) => text.replace(/\{(\w+)\}/g, (all, name) => (name in values ? values[name] : all));

  // When a playground may start (fetch ONNX Runtime Web and its model, `bytes` in all): on a
  // phone-sized screen, once the reader presses the button that says how much it downloads;
  // elsewhere, once the playground comes near the screen (not for a reader who never scrolls to
  // it). Without WebAssembly nothing is fetched, so it starts at once and shows the build's run.
  function whenWanted(root, bytes, words) {
    if (typeof WebAssembly !== "object") {
      return Promise.resolve();
    }
    if (phone()) {
      return new Promise((resolve) => {
        const size = (bytes / 1e6).toFixed(0);
        const status = root.querySelector(".tinyk-pg-status");
        const button = document.createElement("button");
        button.type = "button";
        button.className = "btn btn-sm tinyk-live-load";
        button.textContent = fill(words["load-model"], { size });
        const holder = document.createElement("p");
        holder.append(button);
        status.textContent = fill(words.waiting, { size });
        status.after(holder);
        root.dataset.state = "waiting";
        button.addEventListener("click", () => {
          holder.remove();
          root.querySelector(".tinyk-pg-prompt")?.focus(); // the button that had the focus is gone
          resolve();
        }, { once: true });
      });
    }
    return new Promise((resolve) => {
      if (!("IntersectionObserver" in window)) {
        resolve();
        return;
      }
      const watch = new IntersectionObserver((entries) => {
        if (entries.some((entry) => entry.isIntersecting)) {
          watch.disconnect();
          resolve();
        }
      }, { rootMargin: "400px" });
      watch.observe(root);
    });
  }

  // The chat: on a phone the template's tokens (about 40 chips) start folded. While an answer
  // comes in, its first line is kept on the screen: scrolled up into view if the form, or the
  // status above it growing by a line or two, leaves it below the screen's bottom edge, until the
  // answer ends or the reader scrolls or types.
  function arrangeChat(chat) {
    const template = chat.querySelector(".tinyk-chat-template");
    if (template && phone()) {
      template.open = false;
    }
    const reply = chat.querySelector(".tinyk-chat-reply");
    if (!reply || !("MutationObserver" in window)) {
      return;
    }
    let following = false;
    let started = false;
    for (const type of ["wheel", "touchmove", "keydown"]) {
      window.addEventListener(type, () => { following = false; }, { passive: true });
    }
    new MutationObserver(() => {
      if (reply.textContent === "") {
        started = false;
        return;
      }
      if (!started) {
        started = true;
        following = true;
      }
      if (following) {
        const box = reply.getBoundingClientRect();
        const line = parseFloat(getComputedStyle(reply).lineHeight) || 24;
        if (box.top + Math.min(box.height, line) > window.innerHeight) {
          reply.scrollIntoView({ block: "nearest" });
        }
      }
      if (chat.dataset.state !== "busy") {
        following = false; // the answer is complete: the check above was its last
      }
    }).observe(chat, { childList: true, characterData: true, subtree: true, attributes: true,
      attributeFilter: ["data-state"] });
  }

  window.tinykLive = { whenWanted, phone };
  const arrange = () => document.querySelectorAll(".tinyk-chat").forEach(arrangeChat);
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", arrange);
  } else {
    arrange();
  }
})();
