// The installable app and Web Push, in the page: registers the service worker (/sw.js) and,
// when the operator turns notifications on (feed.js calls labPush.on after their click),
// subscribes this browser with lab's VAPID key and sends the subscription to lab. Turning
// them off unsubscribes it. A browser or push service that refuses says so next to the toggle;
// the tab's own notifications work either way.
"use strict";

(function () {
  const SUBSCRIBE_S = 15;
  const PUSHED = "lab.push"; // localStorage: "on" while this browser holds a subscription lab has

  function csrf() {
    try { return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["x-csrftoken"] || ""; } catch (e) { return ""; }
  }

  function say(text) {
    const el = document.getElementById("push-status");
    if (!el) return;
    el.textContent = text;
    el.hidden = !text;
  }

  function post(url, body) {
    return fetch(url, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf() },
      body: JSON.stringify(body),
    });
  }

  function supported() {
    return "serviceWorker" in navigator && "PushManager" in window && window.isSecureContext;
  }

  function b64ToBytes(text) {
    const pad = "=".repeat((4 - (text.length % 4)) % 4);
    const raw = atob((text + pad).replace(/-/g, "+").replace(/_/g, "/"));
    return Uint8Array.from(raw, function (c) { return c.charCodeAt(0); });
  }

  async function on() {
    if (!window.isSecureContext) {
      say("Notifications with the tab closed need lab served over https; they show while a lab tab is open.");
      return;
    }
    if (!supported()) {
      const ios = /iPhone|iPad/.test(navigator.userAgent) && !navigator.standalone;
      say(ios ? "With the tab closed, iOS notifies only lab added to the Home Screen." : "This browser cannot notify with the tab closed; notifications show while a lab tab is open.");
      return;
    }
    try {
      const info = await (await fetch("/push/key/", { credentials: "same-origin" })).json();
      if (!info.enabled) { say(info.reason); return; }
      const reg = await navigator.serviceWorker.ready;
      // A subscription made with another key (a new data dir) cannot be reused: start afresh.
      const old = await reg.pushManager.getSubscription();
      if (old) await old.unsubscribe();
      say("Subscribing this browser to notifications with the tab closed…");
      // A browser whose push service cannot be reached (offline, or a build without one) may
      // never answer: say so after a while instead of leaving the operator to wonder.
      const sub = await Promise.race([
        reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: b64ToBytes(info.key) }),
        new Promise(function (resolve, reject) {
          setTimeout(function () { reject(new Error("it did not answer in " + SUBSCRIBE_S + " s")); }, SUBSCRIBE_S * 1000);
        }),
      ]);
      const answer = await post("/push/subscribe/", sub.toJSON());
      if (!answer.ok) {
        const why = await answer.json().catch(function () { return {}; });
        await sub.unsubscribe();
        say(why.error || "lab did not take this browser's subscription (" + answer.status + ").");
        return;
      }
      localStorage.setItem(PUSHED, "on");
      say("");
    } catch (e) {
      localStorage.removeItem(PUSHED);
      say("Notifications with the tab closed are unavailable here: the browser's push service failed (" + (e && e.message ? e.message : e) + "). They show while a lab tab is open.");
    }
  }

  async function off() {
    localStorage.removeItem(PUSHED);
    say("");
    if (!supported()) return;
    try {
      const reg = await navigator.serviceWorker.ready;
      const sub = await reg.pushManager.getSubscription();
      if (!sub) return;
      await post("/push/unsubscribe/", { endpoint: sub.endpoint });
      await sub.unsubscribe();
    } catch (e) { /* the account page lists what is left */ }
  }

  // The tab's own notification, through the service worker when this browser gets pushes: the
  // push with the same tag then replaces it instead of showing a second one.
  function show(title, options, onclick) {
    if (localStorage.getItem(PUSHED) === "on" && "serviceWorker" in navigator && navigator.serviceWorker.controller) {
      return navigator.serviceWorker.ready.then(function (reg) { return reg.showNotification(title, options); });
    }
    const n = new Notification(title, options);
    n.onclick = function () { onclick(); n.close(); };
    return Promise.resolve();
  }

  window.labPush = { on: on, off: off, show: show };

  if ("serviceWorker" in navigator && window.isSecureContext) {
    navigator.serviceWorker.register("/sw.js", { scope: "/" }).catch(function (e) {
      console.warn("lab: the service worker did not register:", e);
    });
  }
})();
