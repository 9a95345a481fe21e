/* weftboard: the refresh setting, expiry countdowns, outcome sparklines and the theme toggle.
   Pages work without it; it only makes live fragments poll at the chosen pace. */
(function () {
  "use strict";

  var INTERVALS = [2, 5, 15, 60];
  var DEFAULT_INTERVAL = 5;
  var KEY_INTERVAL = "weftboard.refresh";
  var KEY_PAUSED = "weftboard.paused";
  var KEY_SAMPLES = "weftboard.samples";
  var MAX_SAMPLES = 60;
  var WINDOW_MS = 60000;

  function store(key, value) {
    try { if (value === null) localStorage.removeItem(key); else localStorage.setItem(key, value); } catch (e) { /* private mode */ }
  }
  function read(key) {
    try { return localStorage.getItem(key); } catch (e) { return null; }
  }
  function interval() {
    var value = parseInt(read(KEY_INTERVAL), 10);
    return INTERVALS.indexOf(value) >= 0 ? value : DEFAULT_INTERVAL;
  }
  function paused() { return read(KEY_PAUSED) === "1"; }

  // -- live fragments ---------------------------------------------------------
  // Each [data-live] element polls its own URL. The trigger is rewritten here, before
  // htmx reads it, so every fragment (first load and every swap) follows the setting.
  function triggerFor() {
    var always = "refresh, claimChanged from:body";
    if (paused()) return always;
    return "every " + interval() + "s, " + always;
  }
  function applyTrigger(el) {
    var trigger = triggerFor();
    if (el.getAttribute("hx-trigger") !== trigger) el.setAttribute("hx-trigger", trigger);
  }
  function liveElements() { return document.querySelectorAll("[data-live]"); }
  function applyAll() {
    liveElements().forEach(function (el) {
      applyTrigger(el);
      if (window.htmx) window.htmx.process(el);
    });
    syncControls();
  }
  document.addEventListener("htmx:beforeProcessNode", function (event) {
    var el = event.target;
    if (el && el.hasAttribute && el.hasAttribute("data-live")) applyTrigger(el);
  });
  // Filter forms leave empty fields out of the URL they push (?state=live, not ?state=live&engine=).
  document.addEventListener("htmx:configRequest", function (event) {
    var source = event.detail.elt;
    if (!source || !source.closest || !source.closest("form.filters") || event.detail.verb !== "get") return;
    var params = event.detail.parameters;
    Object.keys(params).forEach(function (key) { if (params[key] === "") delete params[key]; });
  });
  // A poll while the tab is hidden is skipped here (an htmx trigger filter would do it with
  // eval, which the Content-Security-Policy forbids).
  document.addEventListener("htmx:confirm", function (event) {
    var el = event.detail.elt;
    if (document.visibilityState !== "visible" && el && el.hasAttribute && el.hasAttribute("data-live")) {
      event.preventDefault();
    }
  });
  document.addEventListener("visibilitychange", function () {
    // Catch up at once when the tab comes back, instead of waiting a full interval.
    if (document.visibilityState === "visible" && !paused() && window.htmx) {
      liveElements().forEach(function (el) { window.htmx.trigger(el, "refresh"); });
    }
  });

  function syncControls() {
    var select = document.getElementById("refresh-interval");
    var pause = document.getElementById("refresh-pause");
    if (select) select.value = String(interval());
    if (pause) {
      pause.setAttribute("aria-pressed", paused() ? "true" : "false");
      pause.textContent = paused() ? "Resume" : "Pause";
      pause.title = paused() ? "Live refresh is paused" : "Pause live refresh";
    }
    document.documentElement.classList.toggle("is-paused", paused());
  }

  // -- clock offset: countdowns run on the server's (fleet) clock, not the browser's
  function stamp(root) {
    var nodes = [];
    if (root.matches && root.matches("[data-as-of-ms]")) nodes.push(root);
    if (root.querySelectorAll) root.querySelectorAll("[data-as-of-ms]").forEach(function (n) { nodes.push(n); });
    nodes.forEach(function (node) {
      node.dataset.clockOffset = String(parseInt(node.dataset.asOfMs, 10) - Date.now());
      node.dataset.loadedAt = String(Date.now());
    });
  }
  function offsetFor(el) {
    var root = el.closest("[data-as-of-ms]");
    return root ? parseInt(root.dataset.clockOffset || "0", 10) : 0;
  }

  function human(ms) {
    var s = Math.round(Math.abs(ms) / 1000);
    if (s < 60) return s + " s";
    var m = Math.floor(s / 60);
    if (m < 60) return m + " m " + String(s % 60).padStart(2, "0") + " s";
    var h = Math.floor(m / 60);
    return h + " h " + String(m % 60).padStart(2, "0") + " m";
  }

  function tick() {
    document.querySelectorAll(".countdown[data-expires-at]").forEach(function (el) {
      var now = Date.now() + offsetFor(el);
      var left = parseInt(el.dataset.expiresAt, 10) - now;
      var grace = parseInt(el.dataset.graceMs || "0", 10);
      var text, state;
      if (left >= 0) { text = "in " + human(left); state = "ok"; }
      else if (-left <= grace) { text = "grace · takeover in " + human(grace + left); state = "grace"; }
      else { text = "expired " + human(left) + " ago"; state = "expired"; }
      if (el.textContent !== text) el.textContent = text;
      el.classList.toggle("countdown--grace", state === "grace");
      el.classList.toggle("countdown--expired", state === "expired");
    });
    // A fragment that stopped refreshing says so, so nobody trusts old numbers.
    var limit = (3 * interval() + 2) * 1000;
    liveElements().forEach(function (el) {
      var badge = el.querySelector(".as-of__stale");
      if (!badge) return;
      var loaded = parseInt(el.dataset.loadedAt || String(Date.now()), 10);
      var stale = !paused() && document.visibilityState === "visible" && Date.now() - loaded > limit;
      badge.hidden = !stale && !paused();
      badge.textContent = paused() ? " · paused" : " · stale, refresh failing";
    });
  }

  // -- outcome sparklines: samples of the fleet counters, kept for this tab only ----
  function samples() {
    try { return JSON.parse(sessionStorage.getItem(KEY_SAMPLES) || "[]"); } catch (e) { return []; }
  }
  function record(node) {
    var counters;
    try { counters = JSON.parse(node.dataset.counters); } catch (e) { return; }
    var at = parseInt(node.dataset.asOfMs || node.closest("[data-as-of-ms]").dataset.asOfMs, 10);
    var list = samples();
    var last = list[list.length - 1];
    if (last && at <= last.t) return list;
    if (last && Object.keys(counters).some(function (k) { return counters[k] < (last.c[k] || 0); })) list = [];
    list.push({ t: at, c: counters });
    list = list.slice(-MAX_SAMPLES);
    try { sessionStorage.setItem(KEY_SAMPLES, JSON.stringify(list)); } catch (e) { /* full */ }
    return list;
  }
  function draw(node, list) {
    node.querySelectorAll("[data-spark]").forEach(function (svg) {
      var name = svg.dataset.spark;
      // Each point is the rate over the trailing minute (passes run in bursts every
      // renew interval, so sample-to-sample rates would only show spikes).
      var rates = [];
      var from = 0;
      for (var i = 1; i < list.length; i++) {
        while (from < i - 1 && list[i].t - list[from].t > WINDOW_MS) from++;
        var dt = (list[i].t - list[from].t) / 60000;
        if (dt > 0) rates.push(Math.max(0, ((list[i].c[name] || 0) - (list[from].c[name] || 0)) / dt));
      }
      var label = node.querySelector('[data-rate="' + name + '"]');
      // Until this tab has two samples, the server's rate (from the fleet history) stays.
      if (label && rates.length) label.textContent = rates[rates.length - 1].toFixed(1) + "/min";
      var line = svg.querySelector("polyline");
      var area = svg.querySelector(".spark__area");
      if (!line || rates.length < 2) return;
      var max = Math.max.apply(null, rates.concat([1]));
      var step = 120 / (MAX_SAMPLES - 2);
      var start = 120 - step * (rates.length - 1);
      var points = rates.map(function (r, j) {
        return (start + j * step).toFixed(1) + "," + (28 - (r / max) * 26).toFixed(1);
      }).join(" ");
      line.setAttribute("points", points);
      if (area) area.setAttribute("points", start.toFixed(1) + ",28 " + points + " 120,28");
    });
  }

  function onLoad(root) {
    stamp(root);
    var nodes = [];
    if (root.matches && root.matches("[data-counters]")) nodes.push(root);
    if (root.querySelectorAll) root.querySelectorAll("[data-counters]").forEach(function (n) { nodes.push(n); });
    nodes.forEach(function (node) { var list = record(node); draw(node, list || samples()); });
    tick();
  }

  // -- theme: auto -> dark -> light, pinned in a cookie so the server renders it -----
  function setTheme(theme) {
    var root = document.documentElement;
    if (theme === "auto") root.removeAttribute("data-theme"); else root.setAttribute("data-theme", theme);
    document.cookie = "weftboard_theme=" + theme + "; path=/; max-age=31536000; samesite=lax";
    var button = document.getElementById("theme-toggle");
    if (button) button.textContent = "Theme: " + theme;
  }

  document.addEventListener("DOMContentLoaded", function () {
    var select = document.getElementById("refresh-interval");
    var pause = document.getElementById("refresh-pause");
    var theme = document.getElementById("theme-toggle");
    if (select) select.addEventListener("change", function () { store(KEY_INTERVAL, select.value); applyAll(); });
    if (pause) pause.addEventListener("click", function () { store(KEY_PAUSED, paused() ? null : "1"); applyAll(); tick(); });
    if (theme) {
      theme.addEventListener("click", function () {
        var order = ["auto", "dark", "light"];
        var current = document.documentElement.getAttribute("data-theme") || "auto";
        setTheme(order[(order.indexOf(current) + 1) % order.length]);
      });
    }
    document.querySelectorAll("[data-js-only]").forEach(function (el) { el.hidden = false; });
    document.addEventListener("click", function (event) {
      // An action panel's Close button empties the panel it sits in.
      var close = event.target.closest && event.target.closest("[data-close-panel]");
      if (close) {
        var panel = close.closest(".action-panel");
        if (panel) panel.innerHTML = "";
        return;
      }
      var button = event.target.closest && event.target.closest("[data-copy]");
      if (button && navigator.clipboard) {
        navigator.clipboard.writeText(button.dataset.copy);
        button.textContent = "Copied";
        setTimeout(function () { button.textContent = "Copy"; }, 1200);
      }
    });
    document.addEventListener("keydown", function (event) {
      // "/" jumps to the workflow search, as in most consoles.
      if (event.key === "/" && !/^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement.tagName)) {
        var search = document.getElementById("nav-search");
        if (search) { event.preventDefault(); search.focus(); }
      }
    });
    applyAll();
    // htmx has already processed the page by now; later swaps arrive through onLoad.
    onLoad(document.body);
    if (window.htmx) window.htmx.onLoad(function (el) { if (el !== document.body) onLoad(el); });
    setInterval(tick, 1000);
  });
})();
