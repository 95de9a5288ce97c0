// lab's service worker (push/views.py serves it at /sw.js, so its scope is the whole site).
// It keeps the static shell for a fast start and an installed app, shows Web Push
// notifications, and opens a run when one is clicked. It never keeps a page: runs,
// transcripts and diffs always come from the network.
"use strict";

const SHELL = {{ shell|safe }};
const CACHE = "lab-shell-{{ version }}";
const ICON = "{{ icon }}";

self.addEventListener("install", function (event) {
  event.waitUntil(caches.open(CACHE).then(function (cache) { return cache.addAll(SHELL); }).then(function () { return self.skipWaiting(); }));
});

self.addEventListener("activate", function (event) {
  // An older shell goes with the worker that cached it.
  event.waitUntil(caches.keys().then(function (names) {
    return Promise.all(names.filter(function (n) { return n.indexOf("lab-shell-") === 0 && n !== CACHE; }).map(function (n) { return caches.delete(n); }));
  }).then(function () { return self.clients.claim(); }));
});

self.addEventListener("fetch", function (event) {
  const request = event.request;
  if (request.method !== "GET") return;
  const url = new URL(request.url);
  // Only the shell's own files; anything else is left to the browser, untouched and unkept.
  if (url.origin !== self.location.origin || SHELL.indexOf(url.pathname) < 0) return;
  event.respondWith(caches.open(CACHE).then(function (cache) {
    return cache.match(request).then(function (hit) { return hit || fetch(request); });
  }));
});

// The same words and tag as the tab's own notification (static/lab/feed.js): whichever comes
// second replaces the first.
const SAID = {
  question: function (p) { return p.name + " asks" + (p.text ? ": " + p.text : ""); },
  needs_input: function (p) { return p.name + " waits for your input" + (p.text ? ": " + p.text : ""); },
  limit: function (p) { return p.name + ": " + (p.text || "a usage limit stopped its turn"); },
  finished: function (p) { return p.name + " finished its turn"; },
};

function lookingAt(clients, p) {
  // That run's page is in front of the operator: the page itself shows the change.
  return clients.some(function (c) { return c.focused && c.visibilityState === "visible" && new URL(c.url).pathname === p.url; });
}

self.addEventListener("push", function (event) {
  let p = null;
  try { p = event.data ? event.data.json() : null; } catch (e) { p = null; }
  event.waitUntil(self.clients.matchAll({ type: "window", includeUncontrolled: true }).then(function (clients) {
    if (!p || typeof p.name !== "string" || typeof p.tag !== "string") {
      return self.registration.showNotification("lab", { body: "Something changed in lab; open it to see what.", icon: ICON });
    }
    if (lookingAt(clients, p)) return undefined;
    const said = SAID[p.kind] ? SAID[p.kind](p) : p.name + ": " + p.kind;
    return self.registration.showNotification("lab: " + said, {
      tag: p.tag, body: p.text || "", icon: ICON, data: { target: p.target || p.url || "/" },
    });
  }));
});

self.addEventListener("notificationclick", function (event) {
  event.notification.close();
  const data = event.notification.data || {};
  const target = new URL(data.target || "/", self.location.origin);
  if (target.origin !== self.location.origin) return;
  // An open lab tab goes to the run (the one already there first); with none, a new window.
  event.waitUntil(self.clients.matchAll({ type: "window" }).then(function (clients) {
    const tab = clients.find(function (c) { return c.url === target.href; })
      || clients.find(function (c) { return new URL(c.url).pathname === target.pathname; })
      || clients.find(function (c) { return c.visibilityState === "visible"; }) || clients[0];
    if (!tab) return self.clients.openWindow(target.href);
    const there = tab.url === target.href ? Promise.resolve(tab) : tab.navigate(target.href);
    return there.then(function (c) { return (c || tab).focus(); }).catch(function () { /* focus needs a real click */ });
  }));
});
