// The console's queue, kept live: every few seconds the queue fragment is fetched and cards
// are added, updated and removed in place (by id), so the operator's place is kept.
"use strict";
(function () {
  var EVERY_MS = 2000;
  var source = document.getElementById("live-source");
  if (!source) { return; }
  var url = source.getAttribute("data-src");

  function sync(current, fresh) {
    var wanted = Array.prototype.slice.call(fresh.children);
    var byId = {};
    Array.prototype.forEach.call(current.children, function (el) { byId[el.id] = el; });
    var keep = {};
    wanted.forEach(function (el, index) {
      keep[el.id] = true;
      var old = byId[el.id];
      var at = current.children[index] || null;
      if (old && old.outerHTML === el.outerHTML) {
        if (old !== at) { current.insertBefore(old, at); }
        return;
      }
      var node = document.importNode(el, true);
      if (old) { current.replaceChild(node, old); if (node !== current.children[index]) { current.insertBefore(node, current.children[index] || null); } }
      else { current.insertBefore(node, at); }
    });
    Array.prototype.slice.call(current.children).forEach(function (el) {
      if (!keep[el.id]) { current.removeChild(el); }
    });
  }

  function swap(doc, id) {
    var fresh = doc.getElementById(id), old = document.getElementById(id);
    if (fresh && old && fresh.innerHTML !== old.innerHTML) { old.innerHTML = fresh.innerHTML; }
  }

  function poll() {
    if (document.hidden) { return; }
    fetch(url, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (response) {
        if (!response.ok || response.redirected) { throw new Error("signed out"); }
        return response.text();
      })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var live = doc.getElementById("live");
        if (!live) { return; }
        document.title = live.getAttribute("data-title");
        ["counts", "found", "pager", "as-of"].forEach(function (id) { swap(doc, id); });
        sync(document.getElementById("queue"), doc.getElementById("queue"));
      })
      .catch(function () { clearInterval(timer); });
  }

  var timer = setInterval(poll, EVERY_MS);
})();
