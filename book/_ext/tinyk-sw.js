// The book's service worker: book/_ext/tinyk_playground.py writes it at each edition's root, and
// a page with a playground or SmolLM2's chat registers it. The pages it serves (the edition's,
// from the next one the reader opens) carry the two headers that make a page cross-origin
// isolated, which ONNX Runtime Web needs for its threads and which a static host does not send.
// It answers nothing else: every other request is fetched as without it, caches included.
"use strict";
self.addEventListener("install", () => self.skipWaiting()); // a new version serves the next page
self.addEventListener("fetch", (event) => {
  const request = event.request;
  if (request.mode !== "navigate" && request.destination !== "worker") {
    return;
  }
  event.respondWith(fetch(request).then((response) => {
    if (response.type !== "basic" && response.type !== "default") {
      return response; // a redirect, or another site's answer: unchanged
    }
    const headers = new Headers(response.headers);
    headers.set("Cross-Origin-Opener-Policy", "same-origin");
    headers.set("Cross-Origin-Embedder-Policy", "require-corp");
    return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
  }));
});
