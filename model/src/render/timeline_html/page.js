// timeline.html's script: draws the run's lanes from the JSON in #baton-data into the
// inline SVG #chart, and makes it zoom, pan, filter and explain itself. Hand-written, no
// library, nothing loaded: the page must open from a file, offline, years from now.
//
// A failure to draw is never silent: every error is written on the page and in the
// body's data-errors attribute (which the headless-browser test reads). A drawing that
// finished says so in data-rendered.
"use strict";
(function () {
  const errorBox = document.getElementById("errors");
  function reportError(msg) {
    const before = document.body.getAttribute("data-errors");
    const all = (before ? before + " | " : "") + msg;
    document.body.setAttribute("data-errors", all);
    errorBox.hidden = false;
    errorBox.textContent = "This page failed to draw: " + all;
  }
  window.addEventListener("error", (e) => reportError(String(e.message || e)));
  try {
    main();
  } catch (e) {
    reportError(String((e && e.stack) || e));
  }

  function main() {
    const D = JSON.parse(document.getElementById("baton-data").textContent);
    const L = D.lanes;
    const END = Math.max(L.end_us, 1);
    const MIN_SPAN_US = 1000;
    const svg = document.getElementById("chart");
    const view = document.getElementById("view");
    const tip = document.getElementById("tip");

    // Layout, in pixels.
    const GUTTER = 92, RIGHT = 16, AXIS = 24, COUNTS = 96, GAP = 14, CLOCK = 140;
    const laneH = L.lanes.length <= 4 ? 44 : L.lanes.length <= 8 ? 34 : 28;

    const COLORS = {
      span: "#1f77b4", write: "#ff7f0e", rejection: "#d62728",
      down: "#3c3c3c", pause: "#9467bd", "gc-pause": "#9467bd", partition: "#8c564b",
      "slow-link": "#bcbd22", "slow-disk": "#bcbd22", network: "#000000",
      // Leading the etcd cluster is a healthy state, not a fault: green and pale, so that
      // it never reads as a member being down.
      "etcd-leader": "#2ca02c",
      kill: "#000000", restart: "#2ca02c", resign: "#7f7f7f", transfer: "#e377c2", clock: "#17becf",
    };
    const WINDOW_OPACITY = { down: 0.45, pause: 0.4, "gc-pause": 0.2, partition: 0.3, "slow-link": 0.35, "slow-disk": 0.35, network: 0.07, "etcd-leader": 0.22 };
    // What each kind of window means, for the legend (the filter's boxes).
    const WINDOW_LABELS = {
      down: "down (killed)", "slow-disk": "slow disk (fsync)",
      "etcd-leader": "leads the etcd cluster (lease service)",
    };
    const EVENT_COLORS = {
      campaign_started: "#7f7f7f", campaign_failed: "#bcbd22", role_changed: "#1f77b4",
      stopped_acting: "#d62728", released: "#9467bd", handed_over: "#e377c2", transfer_aborted: "#d62728", swim_suspected: "#bcbd22", swim_down: "#d62728", swim_evicted: "#e377c2", lease_granted: "#2ca02c",
      lease_expired: "#8c564b", lease_revoked: "#8c564b", key_deleted: "#e377c2",
      seat_vacated: "#e377c2", job_step_started: "#17becf", job_step_done: "#17becf",
      job_step_abandoned: "#d62728", fault_skipped: "#000000", contract_broken: "#d62728",
    };
    const CLOCK_COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf"];

    // Every drawable thing, with the filter kind it belongs to.
    const items = [];
    const kinds = new Map(); // key -> {label, color, count}
    function kind(key, label, color) {
      if (!kinds.has(key)) kinds.set(key, { label, color, count: 0 });
      kinds.get(key).count += 1;
    }
    for (const w of L.global_windows) {
      items.push({ type: "gwindow", k: w.kind, lane: null, from: w.from_us, to: w.to_us, ref: w });
      kind(w.kind, w.kind + " fault", COLORS.network);
    }
    for (const w of L.windows) {
      items.push({ type: "window", k: w.kind, lane: w.lane, from: w.from_us, to: w.to_us, ref: w });
      kind(w.kind, WINDOW_LABELS[w.kind] || w.kind, COLORS[w.kind] || "#999999");
    }
    for (const s of L.spans) {
      items.push({ type: "span", k: "leadership", lane: s.lane, from: s.from_us, to: s.to_us, ref: s });
      kind("leadership", "believes it leads", COLORS.span);
    }
    for (const m of L.marks) {
      const k = m.kind.startsWith("clock-") ? "clock fault" : m.kind;
      items.push({ type: "mark", k, lane: m.lane, from: m.at_us, to: m.at_us, ref: m });
      kind(k, k, COLORS[m.kind.startsWith("clock-") ? "clock" : m.kind]);
    }
    for (const r of L.rejections) {
      items.push({ type: "rejection", k: "refused writes", lane: r.lane, from: r.at_us, to: r.at_us, ref: r });
      kind("refused writes", "refused writes", COLORS.rejection);
    }
    for (const e of L.events) {
      if (e.lane === null || e.lane === undefined) continue;
      items.push({ type: "event", k: e.event, lane: e.lane, from: e.at_us, to: e.at_us, ref: e });
      kind(e.event, e.event.replace(/_/g, " "), EVENT_COLORS[e.event] || "#999999");
    }
    if (L.writes.length) {
      kinds.set("accepted writes", { label: "accepted writes", color: COLORS.write, count: L.writes_accepted });
    }
    // Write buckets by lane, in time order (the data come sorted so).
    const writesByLane = L.lanes.map(() => []);
    L.writes.forEach((b, i) => writesByLane[b.lane].push(i));

    const state = {
      t0: 0, t1: END, hiddenKinds: new Set(), hiddenLanes: new Set(),
      pinned: null, cursor: null,
    };

    // ----- filters -----
    const kindBox = document.getElementById("kind-filter");
    for (const [key, k] of kinds) {
      const label = document.createElement("label");
      const box = document.createElement("input");
      box.type = "checkbox";
      box.checked = true;
      box.dataset.kind = key;
      box.addEventListener("change", () => {
        if (box.checked) state.hiddenKinds.delete(key); else state.hiddenKinds.add(key);
        render();
      });
      const sw = document.createElement("span");
      sw.className = "swatch";
      sw.style.background = k.color;
      label.append(box, sw, document.createTextNode(k.label + " (" + k.count + ")"));
      kindBox.append(label);
    }
    const laneBox = document.getElementById("lane-filter");
    L.lanes.forEach((name, i) => {
      const label = document.createElement("label");
      const box = document.createElement("input");
      box.type = "checkbox";
      box.checked = true;
      box.dataset.lane = name;
      box.addEventListener("change", () => {
        if (box.checked) state.hiddenLanes.delete(i); else state.hiddenLanes.add(i);
        render();
      });
      label.append(box, document.createTextNode(name));
      laneBox.append(label);
    });

    // ----- helpers -----
    const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
    const textW = (s, px) => String(s).length * px * 0.6;
    function fmtT(us) {
      return (us / 1e6).toFixed(us % 1000 === 0 ? 3 : 6) + " s";
    }
    function niceStep(range, target) {
      const raw = range / Math.max(target, 1);
      const p = Math.pow(10, Math.floor(Math.log10(raw)));
      for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
      return 10 * p;
    }
    function clampView(t0, t1) {
      let w = Math.min(Math.max(t1 - t0, MIN_SPAN_US), END);
      t0 = Math.min(Math.max(t0, 0), END - w);
      return [t0, t0 + w];
    }
    function plotWidth() {
      return Math.max((view.clientWidth || 1000) - GUTTER - RIGHT, 100);
    }
    function timeAt(clientX) {
      const r = svg.getBoundingClientRect();
      const f = (clientX - r.left - GUTTER) / plotWidth();
      return state.t0 + Math.min(Math.max(f, 0), 1) * (state.t1 - state.t0);
    }

    // ----- what hovering or pinning shows -----
    function fieldsOf(el) {
      if (el.dataset.w) {
        const [lane, a, b] = el.dataset.w.split(",").map(Number);
        const idx = writesByLane[lane].slice(a, b + 1).map((i) => L.writes[i]);
        const tokens = [...new Set(idx.map((w) => w.token))].join(", ");
        const n = idx.reduce((s, w) => s + w.count, 0);
        const ops = { claim: 0, tick: 0, seq: 0, checkpoint: 0 };
        let lo = null, hi = null;
        for (const w of idx) {
          for (const o in ops) ops[o] += w.ops[o];
          if (w.seq) {
            lo = lo === null ? w.seq[0] : Math.min(lo, w.seq[0]);
            hi = hi === null ? w.seq[1] : Math.max(hi, w.seq[1]);
          }
        }
        const f = [["what", n === 1 ? "write accepted" : n + " writes accepted"], ["node", L.lanes[lane]],
          ["token", tokens], ["from", fmtT(idx[0].from_us)], ["to", fmtT(idx[idx.length - 1].to_us)],
          ["ops", Object.entries(ops).filter((e) => e[1]).map((e) => e[0] + " " + e[1]).join(", ")]];
        if (lo !== null) f.push(["sequence numbers", lo + " .. " + hi]);
        if (idx.length > 1) f.push(["buckets merged", idx.length + " (zoom in to separate)"]);
        return f;
      }
      const it = items[Number(el.dataset.i)];
      const r = it.ref;
      const lane = it.lane === null ? "every lane" : L.lanes[it.lane];
      switch (it.type) {
        case "span": {
          const f = [["what", "believes it leads"], ["node", lane], ["token", r.token === null ? "none" : r.token],
            ["from", fmtT(r.from_us)], ["to", fmtT(r.to_us)], ["for", ((r.to_us - r.from_us) / 1000).toFixed(1) + " ms"], ["ended by", r.end]];
          if (r.stopped_us !== undefined) f.push(["stopped writing", fmtT(r.stopped_us) + " (" + r.stop_reason + ")"]);
          return f;
        }
        case "window":
        case "gwindow": {
          const f = [["what", WINDOW_LABELS[r.kind] || r.kind], ["lane", lane], ["from", fmtT(r.from_us)],
            ["to", r.open_at_end ? fmtT(r.to_us) + " (still so at the end)" : fmtT(r.to_us)],
            ["for", ((r.to_us - r.from_us) / 1000).toFixed(1) + " ms"], ["target", r.label]];
          if (r.fault !== undefined) f.push(["fault", "#" + r.fault]);
          return f;
        }
        case "mark": {
          const f = [["what", r.kind], ["lane", lane], ["at", fmtT(r.at_us)], ["value", r.label]];
          if (r.fault !== undefined) f.push(["fault", "#" + r.fault]);
          return f;
        }
        case "rejection": {
          const f = [["what", r.kind.replace(/_/g, " ")], ["node", lane], ["at", fmtT(r.at_us)], ["token", r.token]];
          if (r.max_token !== undefined) f.push(["max_token", r.max_token]);
          if (r.op) f.push(["op", JSON.stringify(r.op)]);
          if (r.detail) f.push(["detail", r.detail]);
          return f;
        }
        default: {
          const f = [["event", r.event], ["at", fmtT(r.at_us)], ["lane", lane]];
          for (const [k, v] of Object.entries(r)) {
            if (k !== "event" && k !== "at_us" && k !== "lane") f.push([k, typeof v === "object" ? JSON.stringify(v) : v]);
          }
          return f;
        }
      }
    }
    const table = (f) => f.map(([k, v]) => "<tr><td>" + esc(k) + "</td><td>" + esc(v) + "</td></tr>").join("");

    // ----- drawing -----
    function render() {
      const W = GUTTER + plotWidth() + RIGHT;
      const pw = plotWidth();
      const t0 = state.t0, t1 = state.t1, span = t1 - t0;
      const X = (t) => GUTTER + ((t - t0) / span) * pw;
      const clampX = (x) => Math.min(Math.max(x, GUTTER - 2), GUTTER + pw + 2);
      const lanes = L.lanes.map((_, i) => i).filter((i) => !state.hiddenLanes.has(i));
      const row = new Map(lanes.map((l, r) => [l, r]));
      const countsTop = AXIS;
      const lanesTop = countsTop + COUNTS + GAP;
      const lanesH = lanes.length * laneH;
      const clockTop = lanesTop + lanesH + GAP;
      const hasClock = L.clocks.length > 0 && !state.hiddenKinds.has("clock fault");
      const H = clockTop + (hasClock ? CLOCK + AXIS : 0) + AXIS;
      const Y = (lane, frac) => lanesTop + row.get(lane) * laneH + frac * laneH;
      const out = [];
      let drawn = 0;
      const visible = (it) =>
        it.to >= t0 && it.from <= t1 && !state.hiddenKinds.has(it.k) && (it.lane === null || row.has(it.lane));

      // Time axis and grid.
      const step = niceStep(span, pw / 110);
      const dec = Math.max(0, -Math.floor(Math.log10(step / 1e6)));
      out.push('<g class="axis">');
      for (let t = Math.ceil(t0 / step) * step; t <= t1; t += step) {
        const x = X(t);
        out.push('<line class="grid" x1="' + x + '" x2="' + x + '" y1="' + (AXIS - 4) + '" y2="' + (H - AXIS + 4) + '"/>');
        const label = (t / 1e6).toFixed(dec) + " s";
        out.push('<text x="' + x + '" y="' + (AXIS - 8) + '" text-anchor="middle">' + label + "</text>");
        out.push('<text x="' + x + '" y="' + (H - 6) + '" text-anchor="middle">' + label + "</text>");
      }
      out.push("</g>");

      // Leaders acting: belief and effect step lines.
      const yMax = D.belief.concat(D.effect).reduce((m, p) => Math.max(m, p[1] + 1), 3);
      const CY = (v) => countsTop + COUNTS - (v / yMax) * COUNTS;
      for (let v = 0; v <= yMax; v++) {
        out.push('<line class="grid" x1="' + GUTTER + '" x2="' + (GUTTER + pw) + '" y1="' + CY(v) + '" y2="' + CY(v) + '"/>');
        out.push('<text x="' + (GUTTER - 6) + '" y="' + (CY(v) + 4) + '" text-anchor="end">' + v + "</text>");
      }
      out.push('<text class="lane-name" x="4" y="' + (countsTop + COUNTS / 2) + '">leaders</text>');
      function steps(series, color, width, cls) {
        let v = 0;
        for (const [at, c] of series) if (at <= t0) v = c;
        let d = "M" + GUTTER + "," + CY(v);
        for (const [at, c] of series) {
          if (at <= t0 || at > t1) continue;
          d += " H" + X(at) + " V" + CY(c);
          v = c;
        }
        d += " H" + (GUTTER + pw);
        out.push('<path class="' + cls + '" d="' + d + '" fill="none" stroke="' + color + '" stroke-width="' + width + '" stroke-opacity="0.85"/>');
      }
      steps(D.effect, COLORS.write, 5, "effect");
      steps(D.belief, COLORS.span, 2, "belief");
      out.push('<text x="' + (GUTTER + 6) + '" y="' + (countsTop + 12) + '" fill="#444">leaders acting: by belief (blue), by effect (orange: accepted writes)</text>');

      // Lanes: stripes and names.
      for (const l of lanes) {
        const y = Y(l, 0);
        if (row.get(l) % 2 === 1) out.push('<rect x="' + GUTTER + '" y="' + y + '" width="' + pw + '" height="' + laneH + '" fill="#000" fill-opacity="0.035"/>');
        out.push('<text class="lane-name" x="' + (GUTTER - 8) + '" y="' + (y + laneH / 2 + 4) + '" text-anchor="end">' + esc(L.lanes[l]) + "</text>");
      }
      out.push('<line x1="' + GUTTER + '" x2="' + GUTTER + '" y1="' + lanesTop + '" y2="' + (lanesTop + lanesH) + '" stroke="#888"/>');

      const sel = (i) => (state.pinned === "i" + i ? " sel" : "");
      items.forEach((it, i) => {
        if (!visible(it)) return;
        const r = it.ref;
        const x0 = clampX(X(it.from));
        const x1 = Math.max(clampX(X(it.to)), x0 + 1);
        drawn++;
        switch (it.type) {
          case "gwindow":
            out.push('<rect data-i="' + i + '" class="gwindow' + sel(i) + '" x="' + x0 + '" y="' + lanesTop + '" width="' + (x1 - x0) + '" height="' + lanesH + '" fill="#000" fill-opacity="0.07"/>');
            break;
          case "window": {
            out.push('<rect data-i="' + i + '" class="window ' + r.kind + sel(i) + '" x="' + x0 + '" y="' + Y(it.lane, 0.04) + '" width="' + (x1 - x0) + '" height="' + laneH * 0.92 + '" fill="' + (COLORS[r.kind] || "#999999") + '" fill-opacity="' + (WINDOW_OPACITY[r.kind] || 0.3) + '"/>');
            if (r.kind === "partition" || r.kind === "slow-link" || r.kind === "etcd-leader") {
              const label = r.kind === "etcd-leader" ? r.label : (r.kind === "partition" ? "cut " : "slow ") + r.label;
              if (textW(label, 11) + 4 < x1 - x0) out.push('<text x="' + (x0 + 3) + '" y="' + Y(it.lane, 0.26) + '" font-size="11" fill="#333" pointer-events="none">' + esc(label) + "</text>");
            }
            break;
          }
          case "span": {
            const top = Y(it.lane, 0.36), h = laneH * 0.36;
            const xs = r.stopped_us !== undefined ? Math.min(Math.max(clampX(X(r.stopped_us)), x0), x1) : x1;
            const tok = r.token === null ? "" : r.token;
            out.push('<g data-i="' + i + '" class="span' + sel(i) + '" data-lane="' + esc(L.lanes[it.lane]) + '" data-token="' + tok + '" data-from-us="' + r.from_us + '" data-to-us="' + r.to_us + '">');
            if (xs > x0) out.push('<rect x="' + x0 + '" y="' + top + '" width="' + (xs - x0) + '" height="' + h + '" fill="' + COLORS.span + '" fill-opacity="0.55"/>');
            if (xs < x1) out.push('<rect x="' + xs + '" y="' + top + '" width="' + (x1 - xs) + '" height="' + h + '" fill="' + COLORS.span + '" fill-opacity="0.2"/>');
            out.push('<rect x="' + x0 + '" y="' + top + '" width="' + (x1 - x0) + '" height="' + h + '" fill="none" stroke="' + COLORS.span + '"/>');
            const long = "token " + tok, short = String(tok);
            const label = tok === "" ? "" : textW(long, 12) + 6 <= x1 - x0 ? long : textW(short, 12) + 4 <= x1 - x0 ? short : "";
            if (label) out.push('<text x="' + (x0 + 3) + '" y="' + (top + h / 2 + 4) + '" pointer-events="none">' + label + "</text>");
            out.push("</g>");
            break;
          }
          case "mark": {
            const x = x0, y = Y(it.lane, 0.17);
            const c = r.kind.startsWith("clock-") ? COLORS.clock : COLORS[r.kind] || "#000";
            let d;
            if (r.kind === "kill") d = "M" + (x - 5) + "," + (y - 5) + " L" + (x + 5) + "," + (y - 5) + " L" + x + "," + (y + 4) + "Z";
            else if (r.kind === "restart") d = "M" + (x - 5) + "," + (y + 4) + " L" + (x + 5) + "," + (y + 4) + " L" + x + "," + (y - 5) + "Z";
            else if (r.kind === "resign" || r.kind === "transfer") d = "M" + (x - 4) + "," + y + " a4,4 0 1,0 8,0 a4,4 0 1,0 -8,0";
            else d = "M" + x + "," + (y - 6) + " L" + (x + 5) + "," + y + " L" + x + "," + (y + 6) + " L" + (x - 5) + "," + y + "Z";
            out.push('<path data-i="' + i + '" class="mark ' + r.kind + sel(i) + '" d="' + d + '" fill="' + c + '"/>');
            if (r.kind.startsWith("clock-")) out.push('<text x="' + (x + 8) + '" y="' + (y + 4) + '" font-size="11" fill="' + COLORS.clock + '" pointer-events="none">' + esc(r.label) + "</text>");
            break;
          }
          case "rejection": {
            const x = x0, y = Y(it.lane, 0.54);
            out.push('<g data-i="' + i + '" class="rejection' + sel(i) + '" data-lane="' + esc(L.lanes[it.lane]) + '" data-token="' + r.token + '" data-max-token="' + (r.max_token === undefined ? "" : r.max_token) + '">');
            out.push('<circle cx="' + x + '" cy="' + y + '" r="7" fill="transparent"/>');
            out.push('<path d="M' + (x - 5) + "," + (y - 5) + " L" + (x + 5) + "," + (y + 5) + " M" + (x - 5) + "," + (y + 5) + " L" + (x + 5) + "," + (y - 5) + '" stroke="' + COLORS.rejection + '" stroke-width="2.5"/>');
            const label = r.max_token !== undefined ? "rejected " + r.token + " < " + r.max_token : r.token + (r.kind === "batch_refused" ? " refused" : " late");
            out.push('<text x="' + (x + 8) + '" y="' + (y + 4) + '" fill="' + COLORS.rejection + '" font-weight="600">' + esc(label) + "</text>");
            out.push("</g>");
            break;
          }
          default: {
            const c = EVENT_COLORS[r.event] || "#999999";
            out.push('<circle data-i="' + i + '" class="event ' + r.event + sel(i) + '" cx="' + x0 + '" cy="' + Y(it.lane, 0.07) + '" r="3" fill="' + c + '" fill-opacity="0.8"/>');
          }
        }
      });

      // Accepted writes: buckets closer than two pixels merge into one bar.
      if (!state.hiddenKinds.has("accepted writes")) {
        for (const l of lanes) {
          const idx = writesByLane[l];
          let run = null;
          const flush = () => {
            if (!run) return;
            const id = "w" + l + "," + run.a + "," + run.b;
            out.push('<rect data-w="' + l + "," + run.a + "," + run.b + '" class="writes' + (state.pinned === id ? " sel" : "") + '" x="' + run.x0 + '" y="' + Y(l, 0.76) + '" width="' + Math.max(run.x1 - run.x0, 1.5) + '" height="' + laneH * 0.18 + '" fill="' + COLORS.write + '"/>');
            drawn++;
          };
          for (let j = 0; j < idx.length; j++) {
            const b = L.writes[idx[j]];
            if (b.to_us < t0 || b.from_us > t1) continue;
            const x0 = clampX(X(b.from_us)), x1 = clampX(X(b.to_us));
            if (run && x0 <= run.x1 + 2) {
              run.x1 = Math.max(run.x1, x1);
              run.b = j;
            } else {
              flush();
              run = { x0, x1, a: j, b: j };
            }
          }
          flush();
        }
      }

      // The clock view.
      if (hasClock) {
        const pts = L.clocks.flatMap((c) => c.points.map((p) => p[1] / 1000));
        let lo = Math.min(0, ...pts), hi = Math.max(0, ...pts);
        const pad = Math.max((hi - lo) * 0.1, 1);
        lo -= pad;
        hi += pad;
        const KY = (ms) => clockTop + AXIS + CLOCK - ((ms - lo) / (hi - lo)) * CLOCK;
        out.push('<text x="' + GUTTER + '" y="' + (clockTop + 14) + '" fill="#444">clock offset from global time (ms); every other clock reads global time</text>');
        const ystep = niceStep(hi - lo, 4);
        for (let v = Math.ceil(lo / ystep) * ystep; v <= hi; v += ystep) {
          out.push('<line class="grid" x1="' + GUTTER + '" x2="' + (GUTTER + pw) + '" y1="' + KY(v) + '" y2="' + KY(v) + '"/>');
          out.push('<text x="' + (GUTTER - 6) + '" y="' + (KY(v) + 4) + '" text-anchor="end">' + Math.round(v) + "</text>");
        }
        L.clocks.forEach((c, ci) => {
          if (!row.has(c.lane)) return;
          // The series is straight between points: cut it at the view's edges.
          const at = (t) => {
            const p = c.points;
            for (let j = p.length - 1; j >= 0; j--) {
              if (p[j][0] <= t) {
                if (j === p.length - 1 || p[j + 1][0] === p[j][0]) return p[j][1];
                const f = (t - p[j][0]) / (p[j + 1][0] - p[j][0]);
                return p[j][1] + f * (p[j + 1][1] - p[j][1]);
              }
            }
            return p[0][1];
          };
          const seg = [[t0, at(t0)], ...c.points.filter((p) => p[0] > t0 && p[0] < t1), [t1, at(t1)]];
          const d = seg.map((p, j) => (j ? "L" : "M") + X(p[0]) + "," + KY(p[1] / 1000)).join(" ");
          const color = CLOCK_COLORS[ci % CLOCK_COLORS.length];
          out.push('<path class="clock" d="' + d + '" fill="none" stroke="' + color + '" stroke-width="2"/>');
          out.push('<text x="' + (GUTTER + pw - 4) + '" y="' + (KY(at(t1) / 1000) - 6) + '" text-anchor="end" fill="' + color + '">' + esc(L.lanes[c.lane]) + "</text>");
        });
        out.push('<text class="lane-name" x="4" y="' + (clockTop + AXIS + CLOCK / 2) + '">clocks</text>');
      }

      // The moment a link jumped to.
      if (state.cursor) {
        const [a, b] = state.cursor;
        if (b >= t0 && a <= t1) {
          const x0 = clampX(X(a)), x1 = clampX(X(b));
          out.push('<rect class="cursor" x="' + (x0 - 1) + '" y="' + (AXIS - 4) + '" width="' + Math.max(x1 - x0 + 2, 2) + '" height="' + (H - 2 * AXIS + 8) + '" fill="#d62728" fill-opacity="0.12" stroke="#d62728" stroke-opacity="0.6" stroke-dasharray="4,3" pointer-events="none"/>');
        }
      }

      svg.setAttribute("viewBox", "0 0 " + W + " " + H);
      svg.setAttribute("width", W);
      svg.setAttribute("height", H);
      svg.innerHTML = out.join("");
      document.getElementById("range").textContent = fmtT(t0) + " .. " + fmtT(t1) + " (" + (span / 1e6).toFixed(3) + " s shown)";
      document.body.setAttribute("data-rendered", "lanes=" + lanes.length + " drawn=" + drawn);
    }

    // ----- interaction -----
    let frame = 0;
    function redraw() {
      if (!frame) frame = requestAnimationFrame(() => { frame = 0; render(); });
    }
    function setView(t0, t1) {
      [state.t0, state.t1] = clampView(t0, t1);
      redraw();
    }
    function zoomAt(tc, factor) {
      setView(tc - (tc - state.t0) * factor, tc + (state.t1 - tc) * factor);
    }
    document.getElementById("zoom-in").addEventListener("click", () => zoomAt((state.t0 + state.t1) / 2, 0.5));
    document.getElementById("zoom-out").addEventListener("click", () => zoomAt((state.t0 + state.t1) / 2, 2));
    document.getElementById("fit").addEventListener("click", () => setView(0, END));
    view.addEventListener("wheel", (e) => {
      e.preventDefault();
      zoomAt(timeAt(e.clientX), Math.exp(Math.max(-300, Math.min(300, e.deltaY)) * 0.002));
    }, { passive: false });

    let drag = null;
    view.addEventListener("pointerdown", (e) => {
      drag = { x: e.clientX, t0: state.t0, t1: state.t1, moved: false };
    });
    window.addEventListener("pointermove", (e) => {
      if (!drag) return;
      const dx = e.clientX - drag.x;
      if (Math.abs(dx) > 3) {
        drag.moved = true;
        view.classList.add("dragging");
        tip.hidden = true;
      }
      if (drag.moved) {
        const dt = (-dx / plotWidth()) * (drag.t1 - drag.t0);
        setView(drag.t0 + dt, drag.t1 + dt);
      }
    });
    window.addEventListener("pointerup", (e) => {
      if (drag && !drag.moved) pin(e.target);
      drag = null;
      view.classList.remove("dragging");
    });

    function target(el) {
      return el && el.closest ? el.closest("[data-i],[data-w]") : null;
    }
    svg.addEventListener("mousemove", (e) => {
      if (drag && drag.moved) return;
      const el = target(e.target);
      if (!el) {
        tip.hidden = true;
        return;
      }
      tip.innerHTML = "<table>" + table(fieldsOf(el)) + "</table>";
      tip.hidden = false;
      const x = Math.min(e.clientX + 14, window.innerWidth - tip.offsetWidth - 8);
      const y = e.clientY + 16 + tip.offsetHeight > window.innerHeight ? e.clientY - tip.offsetHeight - 10 : e.clientY + 16;
      tip.style.left = x + "px";
      tip.style.top = y + "px";
    });
    svg.addEventListener("mouseleave", () => { tip.hidden = true; });

    function pin(el) {
      el = target(el);
      if (!el) return;
      state.pinned = el.dataset.w ? "w" + el.dataset.w : "i" + el.dataset.i;
      document.getElementById("fields").innerHTML = table(fieldsOf(el));
      document.getElementById("details-hint").textContent = "Pinned (click another mark to change):";
      redraw();
    }

    // Links in the header jump to their moment, with room around it. A moment is also a
    // URL fragment (#t=FROM_US,TO_US), so a link to the page can open at it.
    function jumpTo(from, to) {
      const pad = Math.max((to - from) * 0.6, 1e6, END * 0.01);
      state.cursor = [from, to];
      setView(from - pad, to + pad);
    }
    function fromHash() {
      const m = /^#t=(-?\d+),(-?\d+)$/.exec(location.hash);
      if (m) jumpTo(Number(m[1]), Number(m[2]));
    }
    for (const a of document.querySelectorAll("a.jump")) {
      a.addEventListener("click", (e) => {
        e.preventDefault();
        jumpTo(Number(a.dataset.fromUs), Number(a.dataset.toUs));
        try {
          history.replaceState(null, "", a.getAttribute("href"));
        } catch (_) {
          // A page opened from a file may refuse; the jump itself happened.
        }
        view.scrollIntoView({ block: "nearest" });
      });
    }
    window.addEventListener("hashchange", fromHash);
    window.addEventListener("resize", redraw);
    render();
    fromHash();
    flush();
    if (location.hash === "#selftest") selfTest();

    // Draws a pending frame now.
    function flush() {
      if (frame) {
        cancelAnimationFrame(frame);
        frame = 0;
        render();
      }
    }

    // Opened with #selftest, the page drives itself as a person would (hover, pin, zoom,
    // pan, filter, jump) and writes what held in the body's data-selftest attribute, for
    // the headless-browser test. Nothing here runs otherwise.
    function selfTest() {
      const done = [];
      const fail = (step, why) => {
        throw new Error("selftest " + step + ": " + why);
      };
      const drawnCount = () => svg.querySelectorAll("[data-i],[data-w]").length;
      const first = svg.querySelector("[data-i],[data-w]");
      if (!first) fail("draw", "nothing drawn");
      const box = first.getBoundingClientRect();
      const at = { bubbles: true, clientX: box.left + box.width / 2, clientY: box.top + box.height / 2 };
      first.dispatchEvent(new MouseEvent("mousemove", at));
      if (tip.hidden || !tip.textContent) fail("hover", "no fields shown");
      done.push("hover");
      first.dispatchEvent(new PointerEvent("pointerdown", at));
      first.dispatchEvent(new PointerEvent("pointerup", at));
      if (!document.getElementById("fields").textContent) fail("pin", "no fields pinned");
      done.push("pin");
      flush();
      const before = state.t1 - state.t0;
      const mid = svg.getBoundingClientRect();
      view.dispatchEvent(new WheelEvent("wheel", { bubbles: true, cancelable: true, deltaY: -300, clientX: mid.left + GUTTER + plotWidth() / 2, clientY: mid.top + 40 }));
      flush();
      if (!(state.t1 - state.t0 < before)) fail("zoom", "the view did not narrow");
      done.push("zoom");
      const t0 = state.t0;
      view.dispatchEvent(new PointerEvent("pointerdown", { bubbles: true, clientX: 600, clientY: 40 }));
      window.dispatchEvent(new PointerEvent("pointermove", { bubbles: true, clientX: 500, clientY: 40 }));
      window.dispatchEvent(new PointerEvent("pointerup", { bubbles: true, clientX: 500, clientY: 40 }));
      flush();
      if (!(state.t0 > t0)) fail("pan", "dragging left did not move the view later");
      done.push("pan");
      setView(0, END);
      flush();
      const all = drawnCount();
      const boxes = [...document.querySelectorAll("#kind-filter input")];
      for (const b of boxes) b.click();
      flush();
      if (drawnCount() !== 0) fail("filter", "unticking every kind left " + drawnCount() + " marks");
      for (const b of boxes) b.click();
      flush();
      if (drawnCount() !== all) fail("filter", "ticking them again drew " + drawnCount() + " of " + all);
      done.push("filter");
      const link = document.querySelector("a.jump");
      if (link) {
        link.click();
        flush();
        const a = Number(link.dataset.fromUs), b = Number(link.dataset.toUs);
        if (!(state.t0 <= a && b <= state.t1 && state.t1 - state.t0 < END)) fail("jump", "the view does not hold the moment");
        if (!svg.querySelector(".cursor")) fail("jump", "no cursor at the moment");
        done.push("jump");
      }
      setView(0, END);
      flush();
      document.body.setAttribute("data-selftest", "ok: " + done.join(" "));
    }
  }
})();
