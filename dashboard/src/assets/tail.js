// hookd dashboard live tail: renders the server-sent delivery events (of
// one tenant, or of every tenant) as list items, each naming its tenant.
// Text only (no HTML from the server is parsed).
(function () {
  "use strict";
  var list = document.getElementById("tail");
  var state = document.getElementById("tail-state");
  if (!list || !window.EventSource) { return; }
  var source = new EventSource(list.getAttribute("data-src"));
  source.onopen = function () { state.textContent = "Watching: new events appear below."; };
  source.onerror = function () { state.textContent = "Disconnected; reconnecting…"; };
  source.onmessage = function (message) {
    var e = JSON.parse(message.data);
    var item = document.createElement("li");
    item.className = "event " + e.kind.replace(/[^a-z]/g, "-");
    var tenant = document.createElement("span");
    tenant.className = "tenant";
    tenant.textContent = e.tenant_id;
    var link = document.createElement("a");
    link.href = "/t/" + encodeURIComponent(e.tenant_id) + "/deliveries/" + encodeURIComponent(e.delivery_id);
    link.textContent = e.delivery_id;
    var text = e.at + " " + e.kind + " ";
    var tail = " event " + e.event_id;
    if (e.attempt) { tail += ", attempt " + e.attempt; }
    if (e.status_code) { tail += ", HTTP " + e.status_code; }
    if (e.reason) { tail += ", " + e.reason; }
    item.appendChild(document.createTextNode(text));
    item.appendChild(tenant);
    item.appendChild(document.createTextNode(" "));
    item.appendChild(link);
    item.appendChild(document.createTextNode(tail));
    list.insertBefore(item, list.firstChild);
    while (list.children.length > 200) { list.removeChild(list.lastChild); }
  };
})();
