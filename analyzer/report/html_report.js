// Draws the lockstep report from the JSON embedded in the page (#lockstep-data). Lanes are drawn only
// for the visible window, so a job of any size costs the same to show; the data stays compact (runs of
// equal calls per group of identical ranks, times as deltas). Elements carry ids and data- attributes
// that tests and scripts can rely on (docs/report.md).
// long file: the page's one script, embedded whole by embed_assets.cmake; its parts share the page
// state (the selected finding, the visible window).
(function() {
'use strict';
const D = JSON.parse(document.getElementById('lockstep-data').textContent);
const SVGNS = 'http://www.w3.org/2000/svg';
const app = document.getElementById('app');

function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  return e;
}
function sv(tag, attrs, text) {
  const e = document.createElementNS(SVGNS, tag);
  for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  return e;
}
function fmtInt(n) {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}
function rankList(v, cap) {
  cap = cap || 12;
  // Ranges keep 1,024 ranks short: "0-511,513-1023".
  const out = [];
  for (let i = 0; i < v.length;) {
    let j = i;
    while (j + 1 < v.length && v[j + 1] === v[j] + 1) j++;
    out.push(j > i ? v[i] + '-' + v[j] : String(v[i]));
    i = j + 1;
  }
  return out.length > cap ? out.slice(0, cap).join(',') + ',...' : out.join(',');
}

// Colour by operation (lst_op codes); the same colour everywhere in the page.
const OP_COLORS = [
  '#9e9e9e', '#8d6e63', '#1e88e5', '#8e24aa', '#43a047', '#00897b', '#00acc1',
  '#f4511e', '#fb8c00', '#3949ab', '#5e35b1', '#d81b60', '#c0ca33', '#6d4c41',
  '#7cb342', '#039be5', '#546e7a', '#26a69a', '#ab47bc', '#ef6c00', '#78909c'
];
function opColor(op) {
  return OP_COLORS[op % OP_COLORS.length];
}

// ----- lanes -----
const comms = D.comms.map(function(c, ci) {
  // Each group's runs, with prefix sums for position -> kind.
  c.groups.forEach(function(g) {
    g.starts = [];
    let s = 0;
    g.runs.forEach(function(r) {
      g.starts.push(s);
      s += r[1];
    });
    g.openSet = new Set(g.open);
  });
  c.index = ci;
  c.lanes.forEach(function(l) {
    const g = c.groups[l.group];
    l.ranks = c.per_rank ? [l.rank] : g.ranks;
    if (l.t) {
      const t0 = new Float64Array(l.t.length);
      let acc = 0;
      for (let i = 0; i < l.t.length; i++) {
        acc += l.t[i];
        t0[i] = acc;
      }
      l.t0 = t0;
    }
  });
  c.findings = [];
  c.start = 0;
  return c;
});
D.findings.forEach(function(f, i) {
  f.index = i;
  if (f.comm_index >= 0) comms[f.comm_index].findings.push(f);
});

function kindAt(g, pos) {
  if (pos < 0 || pos >= g.length) return -1;
  let lo = 0, hi = g.starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (g.starts[mid] <= pos)
      lo = mid;
    else
      hi = mid - 1;
  }
  return g.runs[lo][0];
}

// Where the alignment puts a gap in a lane: a rank that skipped a call gets an empty slot where the
// others have it; the others get one where a rank made an extra call.
function gapsOf(c, lane) {
  const gaps = [];
  c.findings.forEach(function(f) {
    if (f.kind !== 'missing_collective' || f.seq < 0) return;
    const culpritHere = lane.ranks.some(function(r) {
      return f.culprits.indexOf(r) >= 0;
    });
    const extra = f.detail.some(function(d) {
      return d.present && f.culprits.indexOf(d.rank) >= 0;
    });
    if (extra ? !culpritHere : culpritHere) gaps.push({at: f.seq, finding: f.index});
  });
  gaps.sort(function(a, b) {
    return a.at - b.at;
  });
  return gaps;
}
function extraAt(c, lane) {
  const out = {};
  c.findings.forEach(function(f) {
    if (f.kind !== 'missing_collective') return;
    const present = f.detail.filter(function(d) {
      return d.present && f.culprits.indexOf(d.rank) >= 0;
    });
    if (present.length && lane.ranks.some(function(r) {
          return f.culprits.indexOf(r) >= 0;
        }))
      out[f.seq] = 1;
  });
  return out;
}

const state = {
  axis: 'seq',
  width: 48,
  selected: D.findings.length ? 0 : -1,
  t0: 0,
  span: 0
};
// Short jobs fit whole: no wider window than the longest sequence needs.
const longest = Math.max.apply(null, [1].concat(comms.map(function(c) {
  return Math.max.apply(null, [0].concat(c.groups.map(function(g) {
    return g.length;
  })));
})));
state.width = Math.max(8, Math.min(state.width, longest + 2));
// A link can open the page on the time axis: report.html#axis=time.
if (/axis=time/.test(location.hash)) state.axis = 'time';
// Lanes fill the window (within limits), so a screenshot or a narrow window shows them whole.
const LANE_H = 20, LABEL_W = 170,
      PLOT_W = Math.max(500, Math.min(1400, (window.innerWidth || 1300) - LABEL_W - 70));

function laneLabel(c, l) {
  if (c.per_rank) return 'rank ' + l.rank;
  const n = l.ranks.length;
  return 'ranks ' + rankList(l.ranks, 3) + ' (' + n + ')';
}

function selectedFinding() {
  return state.selected >= 0 ? D.findings[state.selected] : null;
}

function drawComm(c, box) {
  box.innerHTML = '';
  const f = selectedFinding();
  const culprits = f && f.comm_index === c.index ? f.culprits : (f ? f.culprits : []);
  const maxLen = Math.max.apply(
      null,
      c.groups
          .map(function(g) {
            return g.length;
          })
          .concat([1]));
  const h = c.lanes.length * LANE_H + 34;
  const svg = sv('svg', {width: LABEL_W + PLOT_W + 10, height: h, class: 'lanes', 'data-comm': c.index});
  // Overview: the whole sequence, the window, and every finding's position.
  const ov = sv('g', {class: 'overview'});
  ov.appendChild(sv('rect', {class: 'overview-bar', x: LABEL_W, y: 2, width: PLOT_W, height: 8}));
  const scale = PLOT_W / Math.max(maxLen + 1, 1);
  if (state.axis === 'seq') {
    ov.appendChild(sv('rect', {
      class: 'overview-win',
      x: LABEL_W + c.start * scale,
      y: 1,
      width: Math.max(3, state.width * scale),
      height: 10
    }));
  }
  c.findings.forEach(function(ff) {
    if (ff.seq >= 0)
      ov.appendChild(sv('rect', {
        class: 'overview-mark',
        x: LABEL_W + ff.seq * scale - 1,
        y: 0,
        width: 3,
        height: 12,
        'data-finding': ff.index
      }));
  });
  ov.addEventListener('click', function(ev) {
    const x = ev.offsetX - LABEL_W;
    c.start = Math.max(0, Math.round(x / scale - state.width / 2));
    drawComm(c, box);
  });
  svg.appendChild(ov);
  const top = 30;
  svg.appendChild(
      sv('text', {class: 'axis', x: LABEL_W, y: 24},
         state.axis === 'seq' ?
             'position ' + c.start + ' - ' + (c.start + state.width - 1) + ' of ' + fmtInt(maxLen) :
             'time ' + (state.t0 / 1e6).toFixed(6) + ' s + ' + (state.span / 1e3).toFixed(3) + ' ms'));
  const cell = PLOT_W / state.width;
  c.lanes.forEach(function(l, li) {
    const g = c.groups[l.group];
    const isCulprit = l.ranks.some(function(r) {
      return culprits.indexOf(r) >= 0;
    }) &&
        f && f.comm_index === c.index;
    const y = top + li * LANE_H;
    const lg = sv('g', {
      class: 'lane' + (isCulprit ? ' culprit' : ''),
      id: 'lane-c' + c.index + '-' + (c.per_rank ? 'r' + l.rank : 'g' + l.group),
      'data-comm': c.index,
      'data-ranks': rankList(l.ranks, 1e9),
      'data-culprit': isCulprit ? 'true' : 'false'
    });
    if (c.per_rank) lg.setAttribute('data-rank', l.rank);
    lg.appendChild(sv('rect', {class: 'lane-bg', x: LABEL_W, y: y, width: PLOT_W, height: LANE_H - 2}));
    lg.appendChild(
        sv('text', {class: 'label' + (isCulprit ? ' culprit' : ''), x: 4, y: y + 13}, laneLabel(c, l)));
    if (state.axis === 'seq')
      drawSeqLane(c, l, g, lg, y, cell);
    else
      drawTimeLane(c, l, g, lg, y);
    svg.appendChild(lg);
  });
  // Findings in view: a column across every lane; the selected one outlined.
  if (state.axis === 'seq') {
    c.findings.forEach(function(ff) {
      if (ff.seq < c.start || ff.seq >= c.start + state.width) return;
      const x = LABEL_W + (ff.seq - c.start) * cell;
      const sel = ff.index === state.selected;
      const r = sv('rect', {
        class: sel ? 'divergence' : 'finding-col',
        x: x - 1,
        y: top - 2,
        width: cell + 2,
        height: c.lanes.length * LANE_H + 2,
        'data-finding': ff.index,
        'data-seq': ff.seq
      });
      if (sel) r.setAttribute('id', 'divergence');
      svg.appendChild(r);
    });
  }
  box.appendChild(svg);
}

function drawSeqLane(c, l, g, lg, y, cell) {
  const gaps = gapsOf(c, l);
  const extras = extraAt(c, l);
  // display position p -> own position: p minus the gaps before it; a gap itself draws empty.
  let gi = 0, before = 0;
  while (gi < gaps.length && gaps[gi].at < c.start) {
    before++;
    gi++;
  }
  for (let p = c.start; p < c.start + state.width; p++) {
    const x = LABEL_W + (p - c.start) * cell;
    if (gi < gaps.length && gaps[gi].at === p) {
      lg.appendChild(sv('rect', {
        class: 'gap',
        x: x + 1,
        y: y + 1,
        width: Math.max(cell - 2, 2),
        height: LANE_H - 4,
        'data-seq': p,
        'data-finding': gaps[gi].finding
      }));
      before++;
      gi++;
      while (gi < gaps.length && gaps[gi].at === p) gi++;
      continue;
    }
    const own = p - before;
    const k = kindAt(g, own);
    if (k < 0) continue;
    const open = g.openSet.has(own);
    const cls = 'call' + (open ? ' open' : '') + (extras[p] ? ' extra' : '');
    callBox(c, l, lg, cls, x, y, Math.max(cell - 1, 1), own, k, open);
  }
}

// One call's box on a lane (sequence or time axis); a click shows the call.
function callBox(c, l, lg, cls, x, y, width, pos, k, open) {
  const r = sv('rect', {
    class: cls,
    x: x,
    y: y,
    width: width,
    height: LANE_H - 2,
    fill: opColor(D.kinds[k].op),
    'data-seq': pos,
    'data-op': D.kinds[k].name
  });
  r.addEventListener('click', function() {
    showCall(c, l, pos, k, open);
  });
  lg.appendChild(r);
}

function drawTimeLane(c, l, g, lg, y) {
  if (!l.t0) {
    lg.appendChild(
        sv('text', {class: 'axis', x: LABEL_W + 6, y: y + 13}, 'no call times kept for this lane'));
    return;
  }
  const t0 = state.t0, t1 = state.t0 + state.span, px = PLOT_W / state.span;
  let lo = 0, hi = l.t0.length;
  while (lo < hi) {
    const m = (lo + hi) >> 1;
    if (l.t0[m] < t0 - 1e9)
      lo = m + 1;
    else
      hi = m;
  }
  let lastX = -1, drawn = 0;
  for (let i = lo; i < l.t0.length && l.t0[i] <= t1 && drawn < 4000; i++) {
    const end = l.d[i] < 0 ? D.end_us : l.t0[i] + l.d[i];
    if (end < t0) continue;
    const x = LABEL_W + Math.max(0, (l.t0[i] - t0) * px);
    const w = Math.max(1, Math.min(LABEL_W + PLOT_W, LABEL_W + (end - t0) * px) - x);
    if (Math.floor(x) === lastX && w < 2) continue;  // one box per pixel is all the eye can see
    lastX = Math.floor(x);
    const k = kindAt(g, i), open = l.d[i] < 0;
    callBox(c, l, lg, 'call' + (open ? ' open' : ''), x, y, w, i, k, open);
    drawn++;
  }
}

function showCall(c, l, pos, k, open) {
  const kd = D.kinds[k], site = D.sites[kd.site] || {};
  const box = document.getElementById('detail');
  box.innerHTML = '';
  box.appendChild(el('h4', {}, kd.name + ' #' + pos + ' on ' + c.name));
  const t = el('table');
  function row(a, b) {
    if (b !== undefined && b !== '') {
      const tr = el('tr');
      tr.appendChild(el('th', {}, a));
      tr.appendChild(el('td', {}, String(b)));
      t.appendChild(tr);
    }
  }
  row(c.per_rank ? 'rank' : 'ranks', rankList(l.ranks));
  row('count',
      kd.count !== undefined ? fmtInt(kd.count) + ' x ' + kd.dtype + ' (' + fmtInt(kd.bytes) + ' B)' : '');
  row('reduction', kd.redop);
  row('root', kd.root);
  row('peer', kd.peer);
  row('tensor', kd.tensor);
  row('call site', (site.text || '?') + (site.function ? ' in ' + site.function : ''));
  if (l.t0 && pos < l.t0.length) {
    row('entered', (l.t0[pos] / 1e6).toFixed(6) + ' s');
    row('returned', l.d[pos] < 0 ? 'never' : '+' + (l.d[pos] / 1e3).toFixed(3) + ' ms');
  } else if (open)
    row('returned', 'never');
  box.appendChild(t);
  box.classList.add('shown');
  box.setAttribute('data-comm', c.index);
  box.setAttribute('data-seq', pos);
}

// ----- sections -----
function summarySection() {
  const s = el('section', {id: 'summary'});
  const p = el('p', {class: 'summary'});
  const sm = D.summary;
  [['ranks', sm.ranks], ['communicators', sm.communicators], ['collectives', fmtInt(sm.collectives)],
   ['records', fmtInt(sm.records)], ['findings', D.findings.length]]
      .forEach(function(x) {
        p.appendChild(el('span', {'data-count': x[0]}, x[0] + ': ' + x[1]));
      });
  s.appendChild(p);
  if (D.missing_processes.length)
    s.appendChild(
        el('p', {class: 'warn', id: 'missing'},
           'missing processes (no trace file): ranks ' + rankList(D.missing_processes)));
  D.warnings.forEach(function(w) {
    s.appendChild(el('p', {class: 'warn'}, 'warning: ' + w));
  });
  return s;
}

function findingsSection() {
  const s = el('section', {id: 'findings-section'});
  s.appendChild(el('h2', {}, D.findings.length ? 'Findings' : 'Findings: none, every rank in lockstep'));
  const ol = el('ol', {id: 'findings'});
  D.findings.forEach(function(f, i) {
    const li = el('li', {
      class: 'finding ' + f.severity + (i === state.selected ? ' selected' : ''),
      id: 'finding-' + i,
      'data-kind': f.kind,
      'data-seq': f.seq,
      'data-comm': f.communicator.name,
      'data-culprits': f.culprits.join(','),
      'data-ranks': f.ranks.join(','),
      'data-highlighted': i === state.selected ? 'true' : 'false'
    });
    const head = el('div');
    head.appendChild(el('span', {class: 'kind'}, f.kind));
    head.appendChild(el('span', {class: 'headline'}, f.summary));
    li.appendChild(head);
    li.appendChild(el('p', {class: 'expl'}, f.explanation));
    const facts = [];
    // A finding without a position of its own (a message, the whole job) names the communicator alone.
    facts.push((f.seq >= 0 ? '#' + f.seq + ' on ' : '') + f.communicator.name + ' (size ' +
               f.communicator.size + ')');
    if (f.ranks.length) facts.push('ranks ' + rankList(f.ranks));
    if (f.culprits.length) facts.push('culprits ' + rankList(f.culprits));
    if (f.tie) facts.push('tie: nobody blamed');
    if (f.tensor) facts.push('tensor \'' + f.tensor + '\'');
    li.appendChild(el('p', {class: 'note'}, facts.join(' \u00b7 ')));
    f.notes.forEach(function(n) {
      li.appendChild(el('p', {class: 'note'}, 'note: ' + n));
    });
    if (f.static) li.appendChild(staticBox(f.static));
    if (f.detail.length) li.appendChild(detailTable(f));
    if (f.edges) {
      const p = el('p', {class: 'note'});
      p.textContent = f.edges
                          .map(function(e) {
                            const at = e.seq >= 0 ? '#' + e.seq : 'a message';
                            return 'rank ' + e.from + ' \u2192 rank ' + e.to + ' (' + at + ' on ' +
                                e.communicator_name + ')';
                          })
                          .join(', ');
      li.appendChild(p);
    }
    if (f.source) li.appendChild(sourceBox(f.source));
    li.addEventListener('click', function() {
      select(i);
    });
    ol.appendChild(li);
  });
  s.appendChild(ol);
  return s;
}

function staticBox(st) {
  const d = el('div', {class: 'static', 'data-rule': st.rule});
  d.appendChild(el('div', {}, 'lint [' + st.rule + ']: ' + (st.summary || st.message)));
  st.notes.forEach(function(n) {
    d.appendChild(el(
        'div', {class: 'note'}, (n.file ? n.file.split('/').pop() + ':' + n.line + ': ' : '') + n.message));
  });
  return d;
}

function detailTable(f) {
  const t = el('table', {class: 'detail'});
  const hr = el('tr');
  ['', 'rank', '#', 'operation', 'arguments', 'tensor', 'call site', 'step', 'time / note'].forEach(function(
      h) {
    hr.appendChild(el('th', {}, h));
  });
  t.appendChild(hr);
  const shown = f.detail.slice(0, 16);
  shown.forEach(function(d) {
    const culprit = f.culprits.indexOf(d.rank) >= 0;
    const tr = el('tr', {class: culprit ? 'culprit' : '', 'data-rank': d.rank});
    const args = d.present ? (d.count !== undefined ? fmtInt(d.count) + ' x ' + d.datatype : '') +
            (d.root !== null && d.root !== undefined ? ' root ' + d.root : '') +
            (d.peer !== null && d.peer !== undefined ? ' peer ' + d.peer : '') +
            (d.redop ? ' ' + d.redop : '') :
                             '';
    const at = d.seq >= 0 ? d.seq : d.position || 'message';
    [culprit ? '*' : '', d.rank, d.present ? at : '-', d.present ? d.operation : 'no call here', args,
     d.tensor || '', d.present && d.call_site ? d.call_site.text : '', d.context || '',
     d.present ? d.time_s.toFixed(3) + ' s' + (d.note ? ' (' + d.note + ')' : '') : (d.note || '')]
        .forEach(function(v) {
          tr.appendChild(el('td', {}, String(v)));
        });
    t.appendChild(tr);
  });
  if (f.detail.length > shown.length) {
    const tr = el('tr');
    tr.appendChild(el('td', {colspan: 9}, '... and ' + (f.detail.length - shown.length) + ' more ranks'));
    t.appendChild(tr);
  }
  return t;
}

function sourceBox(src) {
  const pre = el('pre', {class: 'source', 'data-file': src.file, 'data-line': src.line});
  pre.appendChild(
      el('span', {class: 'file'}, src.file + ':' + src.line + ' (rank ' + src.rank + '\'s call)'));
  src.lines.forEach(function(text, i) {
    const n = src.first + i;
    const s = el('span', n === src.line ? {class: 'hit', 'data-line': n} : {'data-line': n});
    s.appendChild(el('i', {}, String(n)));
    s.appendChild(document.createTextNode(text));
    pre.appendChild(s);
  });
  return pre;
}

function lanesSection() {
  const s = el('section', {id: 'swimlanes'});
  s.appendChild(el('h2', {}, 'Collectives per rank and communicator'));
  const ctl = el('div', {class: 'controls'});
  const axis = el('button', {id: 'axis-toggle', 'data-axis': state.axis},
                  state.axis === 'seq' ? 'axis: call order' : 'axis: time');
  axis.addEventListener('click', function() {
    state.axis = state.axis === 'seq' ? 'time' : 'seq';
    axis.setAttribute('data-axis', state.axis);
    axis.textContent = state.axis === 'seq' ? 'axis: call order' : 'axis: time';
    redraw();
  });
  ctl.appendChild(axis);
  [['\u2190', -0.75], ['\u2192', 0.75]].forEach(function(b) {
    const btn = el('button', {}, b[0]);
    btn.addEventListener('click', function() {
      if (state.axis === 'seq')
        comms.forEach(function(c) {
          c.start = Math.max(0, c.start + Math.round(b[1] * state.width));
        });
      else
        state.t0 = Math.max(0, state.t0 + b[1] * state.span);
      redraw();
    });
    ctl.appendChild(btn);
  });
  [['zoom in', 0.5], ['zoom out', 2]].forEach(function(b) {
    const btn = el('button', {}, b[0]);
    btn.addEventListener('click', function() {
      if (state.axis === 'seq')
        state.width = Math.max(8, Math.min(2000, Math.round(state.width * b[1])));
      else {
        const mid = state.t0 + state.span / 2;
        state.span *= b[1];
        state.t0 = Math.max(0, mid - state.span / 2);
      }
      redraw();
    });
    ctl.appendChild(btn);
  });
  const legend = el('span', {class: 'legend'});
  const seen = {};
  D.kinds.forEach(function(k) {
    if (seen[k.name]) return;
    seen[k.name] = 1;
    const sp = el('span', {});
    const i = el('i');
    i.style.background = opColor(k.op);
    sp.appendChild(i);
    sp.appendChild(document.createTextNode(k.name));
    legend.appendChild(sp);
  });
  ctl.appendChild(legend);
  s.appendChild(ctl);
  comms.forEach(function(c) {
    const d = el('div', {class: 'comm', id: 'comm-' + c.index, 'data-name': c.name});
    const h = el('h3', {}, c.name + ' ');
    h.appendChild(
        el('span', {},
           '(' + c.ranks.length + ' ranks' +
               (c.per_rank ? '' : ', ' + c.lanes.length + ' lanes of ranks with identical calls') + ')'));
    d.appendChild(h);
    d.appendChild(el('div', {class: 'lane-box'}));
    s.appendChild(d);
  });
  return s;
}

function hangSection() {
  const s = el('section', {id: 'hang'});
  const H = D.hang;
  s.appendChild(el('h2', {}, H.hung ? 'Hang: who waits for whom' : 'End state of each rank'));
  const cycle = {};
  D.findings.forEach(function(f) {
    if (f.kind === 'deadlock_cycle' && f.edges)
      f.edges.forEach(function(e) {
        cycle[e.from + '>' + e.to] = 1;
      });
  });
  if (H.look_here.length) {
    // A rank whose send or receive the peer had already matched waits for a message under way, not for
    // a rank: said, so that the pointer is not read as that rank's fault.
    const underWay = H.ranks.filter(function(r) {
      return H.look_here.indexOf(r.rank) >= 0 && r.under_way_with !== undefined;
    });
    s.appendChild(
        el('p', {id: 'look-here', 'data-ranks': H.look_here.join(',')},
           'look at rank' + (H.look_here.length > 1 ? 's ' : ' ') + rankList(H.look_here) +
               ': the others wait for it, and by the records it waits for no other rank' +
               underWay
                   .map(function(r) {
                     return '; rank ' + r.rank + ' is in ' + r.operation + ', whose matching call rank ' +
                         r.under_way_with + ' made: the message was under way';
                   })
                   .join('')));
  }
  const nodes = [];
  const seen = {};
  function add(r) {
    if (!(r in seen)) {
      seen[r] = nodes.length;
      nodes.push(r);
    }
  }
  H.wait_for.forEach(function(e) {
    add(e.from);
    add(e.to);
  });
  H.look_here.forEach(add);
  if (nodes.length && nodes.length <= 256)
    s.appendChild(waitGraph(nodes, seen, cycle));
  else if (nodes.length)
    s.appendChild(el('p', {}, nodes.length + ' ranks wait: too many to draw; see the table.'));
  else
    s.appendChild(
        el('p', {id: 'no-waits'},
           H.hung ? 'Blocked, but waiting for no traced rank.' : 'No rank is blocked in a collective.'));
  s.appendChild(endStates(H));
  return s;
}

function waitGraph(nodes, index, cycle) {
  const n = nodes.length, R = Math.max(170, Math.min(360, n * 30)), W = 2 * R + 420,
        Hh = n === 2 ? 180 : 2 * R + 120;
  const cx = W / 2, cy = Hh / 2;
  const svg = sv('svg', {id: 'waitfor', width: W, height: Hh, 'data-nodes': n});
  const defs = sv('defs');
  [['arrow', '#78909c'], ['arrow-red', '#c62828']].forEach(function(a) {
    const m = sv('marker', {
      id: a[0],
      viewBox: '0 0 10 10',
      refX: 10,
      refY: 5,
      markerWidth: 7,
      markerHeight: 7,
      orient: 'auto-start-reverse'
    });
    m.appendChild(sv('path', {d: 'M0,0 L10,5 L0,10 z', fill: a[1]}));
    defs.appendChild(m);
  });
  svg.appendChild(defs);
  const pos = nodes.map(function(r, i) {
    const a = Math.PI + 2 * Math.PI * i / n;  // from the left: two ranks side by side
    return n === 1 ? [cx, cy] : [cx + R * Math.cos(a), cy + R * Math.sin(a)];
  });
  const NR = 18;
  const stateOf = {};
  D.hang.ranks.forEach(function(r) {
    stateOf[r.rank] = r;
  });
  D.hang.wait_for.forEach(function(e) {
    const a = pos[index[e.from]], b = pos[index[e.to]];
    const dx = b[0] - a[0], dy = b[1] - a[1], len = Math.hypot(dx, dy) || 1;
    // Bend each edge to its right so that a->b and b->a stay apart.
    const off = 40, mx = (a[0] + b[0]) / 2 - dy / len * off, my = (a[1] + b[1]) / 2 + dx / len * off;
    const sx = a[0] + (mx - a[0]) / Math.hypot(mx - a[0], my - a[1]) * NR;
    const sy = a[1] + (my - a[1]) / Math.hypot(mx - a[0], my - a[1]) * NR;
    const ex = b[0] + (mx - b[0]) / Math.hypot(mx - b[0], my - b[1]) * (NR + 2);
    const ey = b[1] + (my - b[1]) / Math.hypot(mx - b[0], my - b[1]) * (NR + 2);
    const inCycle = !!cycle[e.from + '>' + e.to];
    const g = sv('g', {
      class: 'edge' + (inCycle ? ' cycle' : ''),
      'data-from': e.from,
      'data-to': e.to,
      'data-cycle': inCycle ? 'true' : 'false',
      'data-comm': e.communicator_name,
      'data-seq': e.seq
    });
    g.appendChild(sv('path', {
      d: 'M' + sx + ',' + sy + ' Q' + mx + ',' + my + ' ' + ex + ',' + ey,
      'marker-end': inCycle ? 'url(#arrow-red)' : 'url(#arrow)'
    }));
    const label =
        (e.operation || 'collective') + (e.seq >= 0 ? ' #' + e.seq : '') + ' on ' + e.communicator_name;
    // The label sits at the curve's apex, outside the bend.
    const ay = (my + (a[1] + b[1]) / 2) / 2, below = my > (a[1] + b[1]) / 2;
    g.appendChild(
        sv('text', {x: (mx + (a[0] + b[0]) / 2) / 2, y: ay + (below ? 14 : -6), 'text-anchor': 'middle'},
           label));
    svg.appendChild(g);
  });
  nodes.forEach(function(r, i) {
    const st = stateOf[r] || {};
    const look = D.hang.look_here.indexOf(r) >= 0;
    const g = sv('g', {
      class: 'node' + (st.blocked ? ' blocked' : '') + (look ? ' look' : ''),
      id: 'node-' + r,
      'data-rank': r,
      'data-look': look ? 'true' : 'false',
      'data-end': st.end || 'no trace'
    });
    g.appendChild(sv('circle', {cx: pos[i][0], cy: pos[i][1], r: NR}));
    g.appendChild(sv('text', {x: pos[i][0], y: pos[i][1]}, String(r)));
    if (look)
      g.appendChild(sv(
          'text', {x: pos[i][0], y: pos[i][1] + NR + 12, class: 'look-label', fill: '#c62828'}, 'look here'));
    svg.appendChild(g);
  });
  return svg;
}

function endStates(H) {
  const wrap = el('div', {id: 'end-states-box'});
  wrap.appendChild(el('h3', {}, 'Each rank at the end of its trace'));
  const t = el('table', {id: 'end-states', class: 'end-states'});
  const hr = el('tr');
  ['rank', 'end', 'blocked in', 'waits for', 'host / pid'].forEach(function(h) {
    hr.appendChild(el('th', {}, h));
  });
  t.appendChild(hr);
  // Every rank while it is few; a large job lists the ranks that are not simply done, and counts the rest.
  let rows = H.ranks;
  if (rows.length > 256) {
    rows = H.ranks
               .filter(function(r) {
                 return r.blocked || H.look_here.indexOf(r.rank) >= 0 || r.end !== 'exited';
               })
               .slice(0, 256);
    const counts = {};
    H.ranks.forEach(function(r) {
      counts[r.end] = (counts[r.end] || 0) + 1;
    });
    wrap.appendChild(
        el('p', {id: 'end-counts'},
           Object.keys(counts)
               .map(function(k) {
                 return k + ': ' + fmtInt(counts[k]);
               })
               .join(' \u00b7 ')));
  }
  rows.forEach(function(r) {
    const tr =
        el('tr', {'data-rank': r.rank, 'data-end': r.end, 'data-blocked': r.blocked ? 'true' : 'false'});
    [r.rank, r.end + (r.signal ? ' (signal ' + r.signal + ')' : '') + (r.at_stop ? '; at the stop: ' + r.at_stop : ''),
     r.blocked ? r.operation + (r.seq >= 0 ? ' #' + r.seq : '') + ' on ' + r.communicator +
             (r.site ? ' (' + r.site + ')' : '') :
                 '',
     r.waits_for.length ? rankList(r.waits_for) : '', r.host + ' / ' + r.pid]
        .forEach(function(v) {
          tr.appendChild(el('td', {}, String(v)));
        });
    t.appendChild(tr);
  });
  wrap.appendChild(t);
  return wrap;
}

function select(i) {
  state.selected = i;
  document.querySelectorAll('li.finding').forEach(function(li, j) {
    li.classList.toggle('selected', j === i);
    li.setAttribute('data-highlighted', j === i ? 'true' : 'false');
  });
  focus();
  redraw();
}

// Puts the selected finding (else the start) in view on both axes.
function focus() {
  const f = selectedFinding();
  comms.forEach(function(c) {
    const mine = f && f.comm_index === c.index ? f : c.findings[0];
    c.start = mine && mine.seq >= 0 ? Math.max(0, mine.seq - Math.floor(state.width / 3)) : 0;
  });
  const total = Math.max(D.end_us, 1);
  let at = -1;
  if (f)
    f.detail.forEach(function(d) {
      if (d.present && (at < 0 || d.time_s * 1e6 < at)) at = d.time_s * 1e6;
    });
  if (at < 0) {
    state.t0 = 0;
    state.span = total;
  } else {
    state.span = Math.min(total, Math.max(2000, total / 8));
    state.t0 = Math.max(0, at - state.span / 3);
  }
}

function redraw() {
  comms.forEach(function(c) {
    drawComm(c, document.querySelector('#comm-' + c.index + ' .lane-box'));
  });
}

app.appendChild(summarySection());
if (D.hang.hung || D.hang.wait_for.length) app.appendChild(hangSection());
app.appendChild(findingsSection());
app.appendChild(lanesSection());
if (!(D.hang.hung || D.hang.wait_for.length)) app.appendChild(hangSection());
app.appendChild(el('div', {id: 'detail'}));
focus();
redraw();
document.body.setAttribute('data-rendered', 'true');
})();
