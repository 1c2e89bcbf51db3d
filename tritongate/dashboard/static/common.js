/* tritongate dashboard: shared helpers. Loaded first, so every later error is listed in #errors
   (the browser test asserts that list is empty). Strings from the store reach the page only
   through textContent and attribute setters: never innerHTML. */
"use strict";
(function () {
  var pending = [];

  function report(message) {
    var list = document.getElementById("errors");
    if (!list) { pending.push(message); return; }
    var item = document.createElement("li");
    item.textContent = message;
    list.appendChild(item);
  }

  window.addEventListener("error", function (e) {
    var t = e.target;
    if (t && t !== window && (t.src || t.href)) {  // a script or style that did not load
      report("could not load " + (t.src || t.href));
      return;
    }
    report("error: " + (e.message || "unknown") + (e.filename ? " (" + e.filename + ":" + e.lineno + ")" : ""));
  }, true);
  window.addEventListener("unhandledrejection", function (e) { report("unhandled rejection: " + e.reason); });
  document.addEventListener("securitypolicyviolation", function (e) {
    report("blocked by the page's content security policy: " + e.violatedDirective + " " + e.blockedURI);
  });
  document.addEventListener("DOMContentLoaded", function () {
    var queued = pending;
    pending = [];
    queued.forEach(report);
  });

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        if (attrs[k] === null || attrs[k] === undefined) return;
        if (k === "href") node.setAttribute("href", safeHref(attrs[k]));
        else node.setAttribute(k, String(attrs[k]));
      });
    }
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  /* An http(s) URL or a relative path; anything with another scheme (javascript:, data:) is dropped. */
  function safeHref(url) {
    var u = String(url);
    if (/^https?:\/\//i.test(u)) return u;
    if (/^[a-z][a-z0-9+.-]*:/i.test(u) || /^\/\//.test(u)) return "#";
    return u;
  }

  function data(id) { return JSON.parse(document.getElementById(id).textContent); }

  function pad(n) { return (n < 10 ? "0" : "") + n; }
  function date(t) { return t === null || t === undefined ? "–" : new Date(t * 1000).toISOString().slice(0, 10); }
  function dateTime(t) {
    if (t === null || t === undefined) return "–";
    var d = new Date(t * 1000);
    return date(t) + " " + pad(d.getUTCHours()) + ":" + pad(d.getUTCMinutes()) + " UTC";
  }
  function us(v) {
    if (v === null || v === undefined) return "–";
    if (v >= 1000) return (v / 1000).toPrecision(4) + " ms";
    return v.toPrecision(4) + " µs";
  }
  function pct(x) {
    if (x === null || x === undefined) return "–";
    var s = (100 * x).toFixed(1);
    return (x > 0 && s !== "0.0" ? "+" : "") + s + " %";
  }
  function commit(c) {
    if (!c) return "?";
    return /^[0-9a-f]{7,64}$/i.test(c) ? c.slice(0, 7).toLowerCase() : (c.length > 13 ? c.slice(0, 12) + "…" : c);
  }
  function pValue(p) { return p < 0.001 ? p.toExponential(1) : p.toFixed(3); }

  window.TG = {el: el, data: data, date: date, dateTime: dateTime, us: us, pct: pct, commit: commit,
               pValue: pValue, safeHref: safeHref, report: report};
})();
