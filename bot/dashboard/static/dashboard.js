// Copydesk dashboard: copy buttons and live job progress. Every page works without this file.
(function () {
  "use strict";

  function copy(button) {
    var field = document.getElementById(button.getAttribute("data-copy"));
    if (!field) { return; }
    field.select();
    var done = function () { button.textContent = "Copied"; };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(field.value).then(done, function () { document.execCommand("copy"); done(); });
    } else {
      document.execCommand("copy");
      done();
    }
  }

  function active(region) {
    var current = region.querySelector("[data-status]");
    return current && current.getAttribute("data-status") === "active";
  }

  // Fetch the changing part of the job page and swap it in; `done` gets whether that worked.
  function refresh(region, done) {
    var current = region.querySelector("[data-status]");
    var since = encodeURIComponent((current && current.getAttribute("data-updated")) || "");
    fetch(region.getAttribute("data-live-url") + "?since=" + since,
          { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (response) {
        if (!response.ok) { throw new Error(response.status); }
        return response.status === 204 ? "" : response.text();
      })
      .then(function (html) {
        var fresh = html && new DOMParser().parseFromString(html, "text/html").querySelector("[data-status]");
        if (fresh) { region.replaceChildren(document.importNode(fresh, true)); }
        done(true);
      })
      .catch(function () { done(false); });
  }

  // Without an event stream: ask every 2 s (backing off on errors) until the job stops.
  function poll(region) {
    var wait = 2000;
    function tick() {
      if (!active(region)) { return; }
      refresh(region, function (ok) { wait = ok ? 2000 : Math.min(wait * 2, 30000); setTimeout(tick, wait); });
    }
    setTimeout(tick, wait);
  }

  // With the job's event stream: refresh when an event comes, until the job stops; poll if the stream fails.
  function stream(region) {
    if (!active(region)) { return; }
    var source = new EventSource(region.getAttribute("data-events-url"));
    var pending = null;
    function update() {
      if (pending) { return; }
      pending = setTimeout(function () {
        pending = null;
        refresh(region, function () { if (!active(region)) { source.close(); } });
      }, 150);
    }
    (region.getAttribute("data-event-types") || "").split(" ").forEach(function (type) {
      if (type) { source.addEventListener(type, update); }
    });
    source.addEventListener("error", function () {
      if (source.readyState === EventSource.CLOSED) { refresh(region, function () { poll(region); }); }
    });
  }

  function follow(region) {
    if (window.EventSource && region.getAttribute("data-events-url")) { stream(region); } else { poll(region); }
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("button[data-copy]").forEach(function (button) {
      button.addEventListener("click", function () { copy(button); });
    });
    var live = document.getElementById("live");
    if (live) { follow(live); }
  });
})();
