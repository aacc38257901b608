// Fedwarden console: renders each page from the console's JSON API and
// keeps it current from its Server-Sent Events. Plain DOM, no library; text
// from the API is only ever set as textContent.
"use strict";

(function () {
  const STATES = ["InSync", "OutdatedTemplate", "OutdatedOverrides", "ModifiedOutOfBand", "Missing", "Unreachable",
    "ApplyFailed", "AlreadyExists", "WaitingForAgent", "Pending"];
  const body = document.body;
  const main = document.getElementById("main");
  const params = new URLSearchParams(location.search);

  // el makes an element: el("td", {class: "x", "data-cluster": c}, child, "text"...).
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      e.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children.flat()) {
      if (c === undefined || c === null || c === false) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }

  function signIn() {
    location.href = "signin?next=" + encodeURIComponent(location.pathname + location.search);
  }

  async function api(path, opts) {
    const res = await fetch(path, Object.assign({credentials: "same-origin"}, opts || {}));
    if (res.status === 401 && body.dataset.mode === "token") {
      signIn();
      throw new Error("signed out");
    }
    let data = null;
    try { data = await res.json(); } catch (e) { data = {error: res.status + " " + res.statusText}; }
    return {status: res.status, ok: res.ok, data: data};
  }

  function ago(ts) {
    if (!ts) return "";
    const s = Math.max(0, Math.round((Date.now() - new Date(ts).getTime()) / 1000));
    if (s < 60) return s + "s ago";
    if (s < 3600) return Math.floor(s / 60) + "m ago";
    if (s < 86400) return Math.floor(s / 3600) + "h" + Math.floor((s % 3600) / 60) + "m ago";
    return Math.floor(s / 86400) + "d ago";
  }

  function time(ts) {
    return ts ? el("time", {datetime: ts, title: ts}, ago(ts)) : "";
  }

  function problems(list) {
    return (list || []).map((p) => el("p", {class: "problem", "data-testid": "problem"}, p));
  }

  function versions(t, o) {
    return (t || o) ? "t" + (t || "–") + "/o" + (o || "–") : "";
  }

  // debounce runs fn at most once per wait ms, after the last call.
  function debounce(fn, wait) {
    let timer = null;
    return function () {
      if (timer) return;
      timer = setTimeout(() => { timer = null; fn(); }, wait);
    };
  }

  // live opens the page's event stream; onEvent(name, data) gets each
  // event, onReconnect runs when the stream comes back after a break.
  function live(query, onEvent, onReconnect) {
    const state = document.getElementById("live");
    let connected = false, broken = false;
    const es = new EventSource("api/events" + (query ? "?" + query : ""));
    es.addEventListener("hello", () => {
      body.dataset.live = "true";
      state.textContent = "live";
      if (broken && onReconnect) onReconnect();
      connected = true; broken = false;
    });
    es.onerror = () => {
      body.dataset.live = "false";
      state.textContent = "reconnecting…";
      if (connected) broken = true;
    };
    for (const name of ["row", "removed", "clusters"]) {
      es.addEventListener(name, (ev) => {
        let data = {};
        try { data = JSON.parse(ev.data); } catch (e) { return; }
        onEvent(name, data);
      });
    }
  }

  function ready() { body.dataset.ready = "true"; }

  function filterQuery(keys) {
    const q = new URLSearchParams();
    for (const k of keys) for (const v of params.getAll(k)) if (v) q.append(k, v);
    return q;
  }

  // filterForm is the GET form of the fleet and history filters: the URL
  // holds them, so that a link shows the same view.
  function filterForm(action, fields) {
    const form = el("form", {class: "filters", method: "get", action: action});
    for (const f of fields) {
      let input;
      if (f.options) {
        input = el("select", {name: f.name}, el("option", {value: ""}, "any"),
          f.options.map((o) => el("option", {value: o, selected: params.get(f.name) === o}, o)));
      } else {
        input = el("input", {name: f.name, value: params.get(f.name) || "", placeholder: f.placeholder || "", size: f.size || 14});
      }
      form.append(el("label", {}, f.label, input));
    }
    form.append(el("button", {type: "submit"}, "Filter"), el("a", {href: action}, "clear"));
    return form;
  }

  function pager(page, pages, total, what) {
    const nav = el("div", {class: "pager", "data-testid": "pager"});
    const link = (p, text) => {
      const q = new URLSearchParams(location.search);
      q.set("page", p);
      return el("a", {href: "?" + q.toString()}, text);
    };
    if (page > 1) nav.append(link(page - 1, "← previous"));
    nav.append(el("span", {}, `page ${page} of ${pages} · ${total} ${what}`));
    if (page < pages) nav.append(link(page + 1, "next →"));
    return nav;
  }

  // ---- Fleet ----

  function fleetCell(id, cluster, cell) {
    if (!cell) return el("td", {class: "cell none", "data-resource": id, "data-cluster": cluster});
    const td = el("td", {});
    setCell(td, id, cluster, cell);
    return td;
  }

  function setCell(td, id, cluster, cell) {
    td.className = "cell s-" + cell.state;
    td.setAttribute("data-resource", id);
    td.setAttribute("data-cluster", cluster);
    td.setAttribute("data-state", cell.state);
    td.title = cell.state + (cell.driftedSince ? " since " + cell.driftedSince : "");
    td.replaceChildren(cell.state, el("span", {class: "v"}, versions(cell.templateVersion, cell.overrideVersion)));
  }

  function renderCounts(container, counts) {
    container.replaceChildren(...STATES.map((s) => {
      const q = new URLSearchParams(location.search);
      q.set("state", s);
      q.delete("page");
      return el("a", {href: "?" + q.toString(), title: "show " + s},
        el("span", {class: "count s-" + s}, s + " ", el("span", {"data-testid": "count-" + s}, counts[s] || 0)));
    }));
  }

  async function fleetPage() {
    const q = filterQuery(["ns", "kind", "cluster", "state", "q", "page", "size"]);
    const head = el("div", {});
    const counts = el("div", {class: "counts", "data-testid": "counts"});
    const table = el("table", {"data-testid": "fleet"});
    const pagerBox = el("div", {});
    const probs = el("div", {});
    main.replaceChildren(el("h1", {}, "Fleet"), head, probs, counts, pagerBox, el("div", {class: "fleet-wrap"}, table));
    let shown = [];

    async function load() {
      const {ok, data} = await api("api/fleet?" + q.toString());
      if (!ok) { probs.replaceChildren(...problems([data.error])); return; }
      if (!head.firstChild) {
        head.append(filterForm("./", [
          {name: "q", label: "text", placeholder: "kind/namespace/name", size: 20},
          {name: "ns", label: "namespace"},
          {name: "kind", label: "kind", placeholder: "FederatedDeployment"},
          {name: "cluster", label: "cluster"},
          {name: "state", label: "state", options: STATES.concat(["Drifted"])},
        ]));
      }
      probs.replaceChildren(...problems(data.problems));
      renderCounts(counts, data.counts);
      pagerBox.replaceChildren(pager(data.filter.page, data.pages, data.total, "resources"));
      const ids = (data.rows || []).map((r) => r.id);
      if (ids.join("\n") !== shown.join("\n") || !table.firstChild) {
        shown = ids;
        const thead = el("thead", {}, el("tr", {}, el("th", {}, "resource"), data.clusters.map((c) => el("th", {}, c))));
        const tbody = el("tbody", {}, (data.rows || []).map((r) => el("tr", {"data-row": r.id},
          el("th", {scope: "row"}, el("a", {"data-testid": "resource-link", href: r.link}, r.id),
            el("span", {class: "v note"}, " " + versions(r.templateVersion, r.overrideVersion))),
          data.clusters.map((c) => fleetCell(r.id, c, r.cells[c])))));
        if (!ids.length) tbody.append(el("tr", {}, el("td", {class: "empty", colspan: data.clusters.length + 1}, "No federated resource matches.")));
        table.replaceChildren(thead, tbody);
      } else {
        for (const r of data.rows || []) patchRow(r);
      }
    }

    function patchRow(r) {
      for (const td of table.querySelectorAll("td[data-cluster]")) {
        if (td.getAttribute("data-resource") !== r.id) continue;
        const c = td.getAttribute("data-cluster");
        const cell = r.cells[c];
        if (cell) setCell(td, r.id, c, cell);
      }
    }

    const refresh = debounce(load, 1000);
    await load();
    ready();
    live(filterQuery(["ns", "kind", "q"]).toString(), (name, data) => {
      if (name === "row") patchRow(data);
      refresh();
    }, load);
  }

  // ---- Resource ----

  async function resourcePage() {
    const id = {kind: params.get("kind") || "", namespace: params.get("namespace") || "", name: params.get("name") || ""};
    const idq = new URLSearchParams(id).toString();
    const selected = params.get("cluster") || "";
    const title = el("h1", {}, `${id.kind} ${id.namespace ? id.namespace + "/" : ""}${id.name}`);
    const summary = el("p", {class: "note"});
    const probs = el("div", {});
    const button = el("button", {type: "button", "data-testid": "resync"}, "Resync");
    const denied = el("span", {"data-testid": "resync-denied", class: "note"});
    const result = el("span", {"data-testid": "resync-result", class: "result", hidden: true});
    const copies = el("table", {"data-testid": "copies"});
    const judge = el("div", {class: "actions", "data-testid": "judge", hidden: true});
    const diffBox = el("div", {});
    const ledger = el("table", {"data-testid": "history"});
    const depsHead = el("h2", {hidden: true}, "Dependencies");
    const deps = el("table", {"data-testid": "dependencies", hidden: true});
    const depOf = el("p", {class: "note", "data-testid": "dependency-of", hidden: true});
    main.replaceChildren(title, summary, depOf, probs,
      el("div", {class: "actions"}, button, denied, result),
      el("h2", {}, "Copies"), copies, depsHead, deps,
      el("h2", {}, "Diff: desired against live"), judge, diffBox,
      el("h2", {}, "Drift ledger"), ledger);

    button.addEventListener("click", async () => {
      button.disabled = true;
      result.hidden = false;
      result.className = "result";
      result.textContent = "requesting…";
      const {ok, data} = await api("api/resync?" + idq, {method: "POST", headers: {"X-Fedwarden-Console": "1"}});
      result.textContent = (ok ? "" : "refused: ") + (data.message || data.error || "");
      result.classList.toggle("refused", !ok);
      result.setAttribute("data-ok", ok ? "true" : "false");
      button.disabled = false;
      loadResource();
    });

    let placed = [];
    let rowID = "";
    async function loadResource() {
      const {ok, data} = await api("api/resource?" + idq);
      if (!ok) {
        probs.replaceChildren(...problems([data.error]));
        button.disabled = true;
        denied.textContent = data.error || "";
        return;
      }
      title.textContent = data.id;
      rowID = data.id;
      summary.textContent = `ClusterPropagatedVersion ${data.namespace}/${data.cpv} · host at template version ${data.templateVersion || "–"}, ` +
        `override version ${data.overrideVersion || "–"}` + (data.requested ? ` · kubefed.io/resync ${data.requested}` : "") +
        (data.resync ? ` (acted on: ${data.resync})` : "");
      probs.replaceChildren(...problems(data.problems));
      button.disabled = !data.resyncAllowed;
      denied.textContent = data.resyncAllowed ? "" : (data.resyncDenied || "not allowed");
      denied.hidden = !!data.resyncAllowed;
      placed = data.clusters.filter((c) => c.placed).map((c) => c.cluster);
      copies.replaceChildren(
        el("thead", {}, el("tr", {}, ["cluster", "mode", "state", "template", "override", "member resourceVersion", "observedGeneration",
          "changed paths", "changed by", "drifted since", "remediation", "message"].map((h) => el("th", {}, h)))),
        el("tbody", {}, data.clusters.map((c) => el("tr", {"data-testid": "cluster-" + c.cluster, "data-cluster": c.cluster},
          el("td", {}, el("a", {href: "?" + new URLSearchParams(Object.assign({}, id, {cluster: c.cluster})).toString()}, c.cluster)),
          el("td", {}, c.mode || ""),
          el("td", {"data-testid": "state", class: "s-" + c.state}, c.state),
          el("td", {}, c.templateVersion || ""), el("td", {}, c.overrideVersion || ""),
          el("td", {class: "mono"}, c.version || ""), el("td", {}, c.observedGeneration || ""),
          el("td", {"data-testid": "changed-paths", class: "mono"}, (c.changedPaths || []).join("\n")),
          el("td", {"data-testid": "changed-by"}, (c.changedBy || []).join(", ")),
          el("td", {"data-testid": "drifted-since"}, time(c.driftedSince)),
          el("td", {}, c.remediation || ""), el("td", {}, c.message || "")))));
      renderDependencies(data);
      renderLedger(ledger, data.ledger, false);
      renderDiffHead();
      renderJudge(data);
    }

    // The dependencies that go with a workload, each copy's state by
    // cluster; and, on a dependency's page, the workloads it goes with.
    function renderDependencies(data) {
      const list = data.dependencies || [];
      depsHead.hidden = deps.hidden = !list.length;
      const clusters = [...new Set(list.flatMap((d) => d.clusters.map((c) => c.cluster)))].sort();
      deps.replaceChildren(
        el("thead", {}, el("tr", {}, el("th", {}, "dependency"), clusters.map((c) => el("th", {}, c)))),
        el("tbody", {}, list.map((d) => el("tr", {"data-testid": "dependency-" + d.id},
          el("th", {scope: "row"}, el("a", {href: "?" + new URLSearchParams({kind: d.kind, namespace: data.namespace, name: d.name}).toString()}, d.id)),
          clusters.map((c) => {
            const copy = d.clusters.find((x) => x.cluster === c);
            return el("td", {"data-cluster": c, class: copy ? "s-" + copy.state : ""}, copy ? copy.state : "");
          })))));
      depOf.hidden = !(data.dependencyOf || []).length;
      depOf.textContent = "Dependency of " + (data.dependencyOf || []).join(", ") + " (spec.propagateDependencies)";
    }

    // Codify and Waive, for the selected cluster's drifted copy: what
    // `fedwarden drift codify` and `fedwarden drift waive` do, as the user.
    const codify = el("button", {type: "button", "data-testid": "codify"}, "Codify");
    const waiveFor = el("input", {type: "text", "data-testid": "waive-for", value: "4h", size: 6, "aria-label": "waive for"});
    const waiveReason = el("input", {type: "text", "data-testid": "waive-reason", placeholder: "reason", size: 24, "aria-label": "reason"});
    const waive = el("button", {type: "button", "data-testid": "waive"}, "Waive");
    const judged = el("span", {"data-testid": "judge-result", class: "result", hidden: true});
    judge.replaceChildren(codify, el("span", {class: "note"}, " or keep it for "), waiveFor, waiveReason, waive, judged);
    async function act(path, init) {
      codify.disabled = waive.disabled = true;
      judged.hidden = false;
      judged.className = "result";
      judged.textContent = "requesting…";
      const {ok, data} = await api(path + "?" + new URLSearchParams(Object.assign({}, id, {cluster: selected})).toString(),
        Object.assign({method: "POST", headers: {"X-Fedwarden-Console": "1", "Content-Type": "application/json"}}, init || {}));
      judged.textContent = (ok ? "" : "refused: ") + (data.message || data.error || "");
      judged.classList.toggle("refused", !ok);
      judged.setAttribute("data-ok", ok ? "true" : "false");
      codify.disabled = waive.disabled = false;
      loadResource();
    }
    codify.addEventListener("click", () => act("api/codify"));
    waive.addEventListener("click", () => act("api/waive", {body: JSON.stringify({for: waiveFor.value, reason: waiveReason.value})}));
    function renderJudge(data) {
      const c = data.clusters.find((c) => c.cluster === selected);
      const drifted = !!c && (c.state === "ModifiedOutOfBand" || c.state === "Waived") && (c.changedPaths || []).length > 0;
      judge.hidden = !drifted && judged.hidden;
      codify.disabled = waive.disabled = !drifted || !data.resyncAllowed;
      codify.title = waive.title = data.resyncAllowed ? "" : (data.resyncDenied || "not allowed");
    }

    const diffHead = el("div", {class: "diff-head"});
    const diffBody = el("div", {});
    diffBox.replaceChildren(diffHead, diffBody);
    function renderDiffHead() {
      diffHead.replaceChildren(el("span", {}, "cluster:"), ...placed.map((c) => el("a", {
        href: "?" + new URLSearchParams(Object.assign({}, id, {cluster: c})).toString(), class: c === selected ? "active" : "",
      }, c)));
      if (!selected) diffBody.replaceChildren(el("p", {class: "note", "data-testid": "diff-hint"}, "Choose a cluster to compare its copy with the desired one."));
    }

    async function loadDiff() {
      if (!selected) return;
      const {ok, data} = await api("api/diff?" + new URLSearchParams(Object.assign({}, id, {cluster: selected})).toString());
      if (!ok) { diffBody.replaceChildren(el("div", {"data-testid": "diff", class: "problem"}, data.error)); return; }
      if (data.error) {
        diffBody.replaceChildren(el("div", {"data-testid": "diff", "data-pull": data.pull ? "true" : "false"},
          el("p", {class: data.pull ? "note" : "problem"}, data.error), data.agent ? el("p", {}, selected + ": " + data.agent) : ""));
        return;
      }
      if (!data.differs) {
        diffBody.replaceChildren(el("div", {"data-testid": "diff", "data-differs": "false"}, el("p", {}, selected + ": in sync, no difference.")));
        return;
      }
      const rows = data.lines.map((l) => {
        if (l.op === "skip") return el("tr", {class: "skip"}, el("td", {colspan: 4}, "⋯"));
        const left = l.left ? l.left.text : "", right = l.right ? l.right.text : "";
        const lc = l.op === "change" || l.op === "del" ? (l.left ? "del" : "") : "";
        const rc = l.op === "change" || l.op === "add" ? (l.right ? "add" : "") : "";
        return el("tr", {},
          el("td", {class: "n"}, l.left ? l.left.n : ""), el("td", {class: lc || null}, left),
          el("td", {class: "n"}, l.right ? l.right.n : ""), el("td", {class: rc || null}, right));
      });
      diffBody.replaceChildren(
        el("p", {"data-testid": "diff-reasons"}, selected + " differs: " + (data.reasons || []).join("; ")),
        el("table", {class: "diff", "data-testid": "diff", "data-differs": "true"},
          el("thead", {}, el("tr", {}, el("th", {class: "n"}, ""), el("th", {}, "desired"), el("th", {class: "n"}, ""), el("th", {}, "live in " + selected))),
          el("tbody", {}, rows)));
    }

    await loadResource();
    await loadDiff();
    ready();
    const refresh = debounce(loadResource, 300);
    const refreshDiff = debounce(loadDiff, 1500);
    live(new URLSearchParams({resource: rowID || "-"}).toString(), () => { refresh(); refreshDiff(); }, () => { loadResource(); loadDiff(); });
  }

  function renderLedger(table, episodes, withResource) {
    const heads = (withResource ? ["resource"] : []).concat(["cluster", "state", "start", "end", "duration", "changed paths", "changed by",
      "versions before → after", "resolved by", "waived"]);
    // failoverMoves says what a failover episode moved.
    const failoverMoves = (e) => (e.replicas != null ? e.replicas + " replicas moved to the other clusters" : "copies kept") +
      (e.surge && e.surge.length ? "; surge copies in " + e.surge.join(", ") : "");
    const dur = (a, b) => {
      const s = Math.round(((b ? new Date(b) : new Date()) - new Date(a)) / 1000);
      return s < 60 ? s + "s" : s < 3600 ? Math.floor(s / 60) + "m" + (s % 60) + "s" : Math.floor(s / 3600) + "h" + Math.floor((s % 3600) / 60) + "m";
    };
    const rows = (episodes || []).map((e) => el("tr", {"data-testid": "episode", "data-cluster": e.cluster, "data-resolved-by": e.resolvedBy || "",
      "data-open": e.open ? "true" : "false", "data-state": e.state},
    withResource ? el("td", {}, el("a", {href: e.link}, e.resource)) : null,
    el("td", {}, e.cluster), el("td", {class: "s-" + e.state}, e.state), el("td", {}, time(e.start)),
    el("td", {}, e.open ? "going on" : time(e.end)), el("td", {}, dur(e.start, e.end)),
    el("td", {class: "mono"}, e.state === "FailedOver" ? failoverMoves(e) : (e.changedPaths || []).join("\n")), el("td", {}, (e.changedBy || []).join(", ")),
    el("td", {}, e.state === "FailedOver" ? "" : versions(e.before.templateVersion, e.before.overrideVersion) + (e.open ? "" : " → " + versions(e.after.templateVersion, e.after.overrideVersion))),
    el("td", {"data-testid": "resolved-by"}, e.open ? "" : e.resolvedBy + (e.resync ? " (" + e.resync + ")" : "")),
    el("td", {"data-testid": "waived"}, e.waiver ? time(e.waiver.since) + " → " + time(e.waiver.until) + ": " + e.waiver.reason + (e.waiver.owner ? " (" + e.waiver.owner + ")" : "") : "")));
    if (!rows.length) rows.push(el("tr", {}, el("td", {class: "empty", colspan: heads.length}, "No drift episode recorded.")));
    table.replaceChildren(el("thead", {}, el("tr", {}, heads.map((h) => el("th", {}, h)))), el("tbody", {}, rows));
  }

  // ---- Clusters ----

  async function clustersPage() {
    const probs = el("div", {});
    const table = el("table", {"data-testid": "clusters"});
    main.replaceChildren(el("h1", {}, "Clusters"), probs, table);
    async function load() {
      const {ok, data} = await api("api/clusters");
      if (!ok) { probs.replaceChildren(...problems([data.error])); return; }
      probs.replaceChildren(...problems(data.problems));
      table.replaceChildren(
        el("thead", {}, el("tr", {}, ["cluster", "ready", "reason", "mode", "version", "region", "agent lease renewed", "copies", "drifted copies"]
          .map((h) => el("th", {}, h)))),
        el("tbody", {}, data.clusters.map((c) => el("tr", {"data-cluster": c.name},
          el("td", {}, el("a", {href: "./?" + new URLSearchParams({cluster: c.name}).toString()}, c.name)),
          el("td", {"data-testid": "ready", class: c.ready === "True" ? "s-InSync" : c.ready === "False" ? "s-Unreachable" : "s-Pending"}, c.ready),
          el("td", {title: c.message || ""}, c.reason || ""), el("td", {"data-testid": "mode"}, c.mode),
          el("td", {}, c.kubernetesVersion || ""), el("td", {}, c.region || ""),
          el("td", {"data-testid": "lease"}, c.mode === "Pull" ? (c.leaseRenewed ? [time(c.leaseRenewed), c.leaseHolder ? " by " + c.leaseHolder : ""] : "never") : "–"),
          el("td", {}, c.copies),
          el("td", {"data-testid": "drifted"}, c.drifted ? el("a", {href: "./?" + new URLSearchParams({cluster: c.name, state: "Drifted"}).toString()}, c.drifted) : "0")))));
      if (!data.clusters.length) table.append(el("tbody", {}, el("tr", {}, el("td", {colspan: 9, class: "empty"}, "No FederatedCluster."))));
    }
    await load();
    ready();
    const refresh = debounce(load, 1000);
    live("", () => refresh(), load);
  }

  // ---- History ----

  async function historyPage() {
    const q = filterQuery(["ns", "kind", "cluster", "state", "resolvedBy", "q", "page", "size"]);
    const probs = el("div", {});
    const table = el("table", {"data-testid": "timeline"});
    const pagerBox = el("div", {});
    main.replaceChildren(el("h1", {}, "History"), filterForm("history", [
      {name: "q", label: "text", placeholder: "kind/namespace/name", size: 20},
      {name: "ns", label: "namespace"}, {name: "kind", label: "kind"}, {name: "cluster", label: "cluster"},
      {name: "state", label: "state", options: STATES.slice(1, 8)},
      {name: "resolvedBy", label: "resolved by", options: ["Enforce", "Resync", "TemplateChange", "Returned", "Automatic", "Manual", "Policy"]},
    ]), probs, pagerBox, table);
    async function load() {
      const {ok, data} = await api("api/history?" + q.toString());
      if (!ok) { probs.replaceChildren(...problems([data.error])); return; }
      probs.replaceChildren(...problems(data.problems));
      pagerBox.replaceChildren(pager(data.filter.page, data.pages, data.total, "episodes"));
      renderLedger(table, data.episodes, true);
    }
    await load();
    ready();
    const refresh = debounce(load, 2000);
    live(filterQuery(["ns", "kind", "q"]).toString(), () => refresh(), load);
  }

  async function whoami() {
    try {
      const {ok, data} = await api("api/whoami");
      if (ok && data.user) document.getElementById("whoami").textContent = (data.mode === "token" ? "signed in as " : "as ") + data.user;
    } catch (e) { /* signed out */ }
  }

  const page = body.dataset.page;
  for (const a of document.querySelectorAll("[data-nav]")) a.classList.toggle("active", a.dataset.nav === page);
  const pages = {fleet: fleetPage, resource: resourcePage, clusters: clustersPage, history: historyPage};
  if (pages[page]) {
    whoami();
    pages[page]().catch((e) => {
      if (e.message !== "signed out") main.append(el("p", {class: "problem"}, "The page failed: " + e.message));
    });
  }
})();
