/*
** sim_report.c: what a simulation prints: a summary per run (table or JSON),
** the time series (--out) and the self-contained HTML report with an SVG
** chart per series (--report).
*/
#define _GNU_SOURCE
#include "sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

summary summarize(run *r) {
  summary s = {0};
  s.cost = r->cost;
  for (size_t i = 0; i < r->pods.n; i++) s.pod_hours += r->pods.v[i].run_ms / HOUR_MS;
  s.cost_per_pod_hour = s.pod_hours > 0 ? s.cost / s.pod_hours : 0;
  s.pods = r->arrivals;
  double *w = dt__malloc((r->waits.n ? r->waits.n : 1) * sizeof *w);
  if (w) {
    if (r->waits.n) memcpy(w, r->waits.v, r->waits.n * sizeof *w);
    s.wait_p50 = quantile(w, r->waits.n, 0.5);
    s.wait_p99 = quantile(w, r->waits.n, 0.99);
    dt__free(w);
  }
  s.launches = r->launches;
  s.disruptions = r->disruptions;
  s.interruptions = r->interruptions;
  for (size_t i = 0; i < r->pods.n; i++) s.pending_end += r->pods.v[i].state == POD_PENDING;
  s.policy_errors = policy_error_count(r) - r->policy_errors_before;
  return s;
}

static cJSON *num(double v) {
  char b[64];
  snprintf(b, sizeof b, "%.6g", v);
  return cJSON_CreateNumber(strtod(b, NULL)); /* six significant digits: stable across machines */
}

/* Numbers under the keys named in keys (separated by spaces): v[i] under
** the i-th, six significant digits (num), or as it is when its key is
** written #key (a count). */
static void put_nums(cJSON *o, const char *keys, const double *v) {
  for (size_t i = 0; *keys; i++) {
    bool count = *keys == '#';
    keys += count;
    size_t n = strcspn(keys, " ");
    char key[64];
    snprintf(key, sizeof key, "%.*s", (int)n, keys);
    if (count)
      cJSON_AddNumberToObject(o, key, v[i]);
    else
      cJSON_AddItemToObject(o, key, num(v[i]));
    keys += n + (keys[n] == ' ');
  }
}

cJSON *run_json(run *r, const summary *s) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "name", r->label);
  cJSON_AddStringToObject(o, "packing", r->packing == DT_PACKING_FFD ? "ffd" : "cost");
  cJSON *sm = cJSON_AddObjectToObject(o, "summary");
  put_nums(sm, "cost podHours costPerPodHour pendingP50Seconds pendingP99Seconds #pods #nodesLaunched #disruptions",
           (double[]){s->cost, s->pod_hours, s->cost_per_pod_hour, s->wait_p50, s->wait_p99, (double)s->pods,
                      (double)s->launches, (double)s->disruptions});
  cJSON *byr = cJSON_AddObjectToObject(sm, "disruptionsByReason");
  for (size_t i = 0; i < r->reasons.n; i++)
    cJSON_AddNumberToObject(byr, r->reasons.v[i].reason, (double)r->reasons.v[i].n);
  put_nums(sm, "#interruptions #pendingAtEnd #policyErrors",
           (double[]){(double)s->interruptions, (double)s->pending_end, (double)s->policy_errors});
  if (r->in->check) cJSON_AddStringToObject(sm, "invariants", r->violation[0] ? r->violation : "held");
  cJSON *series = cJSON_AddArrayToObject(o, "series");
  for (size_t i = 0; i < r->series.n; i++) {
    const sample *p = &r->series.v[i];
    cJSON *x = cJSON_CreateObject();
    cJSON_AddNumberToObject(x, "t", (double)p->t);
    cJSON *nodes = cJSON_AddObjectToObject(x, "nodes");
    for (int k = 0; k < DT_CT_N; k++) cJSON_AddNumberToObject(nodes, dt__ct_names[k], p->nodes[k]);
    put_nums(x,
             "hourlyCost cost #pending #running pendingP50Seconds pendingP99Seconds cpuRequested cpuAllocatable "
             "memoryRequestedGiB memoryAllocatableGiB #launches #disruptions #interruptions #policyErrors",
             (double[]){p->hourly, p->cost, (double)p->pending, (double)p->running, p->wait_p50, p->wait_p99,
                        p->cpu_req, p->cpu_alloc, p->mem_req, p->mem_alloc, (double)p->launches, (double)p->disruptions,
                        (double)p->interruptions, (double)p->policy_errors});
    cJSON_AddItemToArray(series, x);
  }
  return o;
}

void print_table(FILE *f, run *runs, const summary *ss, size_t n) {
  fprintf(f, "%-22s %12s %10s %11s %11s %8s %11s %13s %8s\n", "RUN", "COST", "$/POD-H", "P50 PENDING", "P99 PENDING",
          "NODES", "DISRUPTIONS", "INTERRUPTIONS", "PENDING");
  for (size_t i = 0; i < n; i++) {
    char p50[32], p99[32];
    snprintf(p50, sizeof p50, "%.0fs", ss[i].wait_p50);
    snprintf(p99, sizeof p99, "%.0fs", ss[i].wait_p99);
    fprintf(f, "%-22.22s %12.2f %10.4f %11s %11s %8zu %11zu %13zu %8zu\n", runs[i].label, ss[i].cost,
            ss[i].cost_per_pod_hour, p50, p99, ss[i].launches, ss[i].disruptions, ss[i].interruptions,
            ss[i].pending_end);
  }
}

/* ------------------------------------------------------------ the HTML report */

static const char *const k_colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"};

static void html_escape(dt_buf *b, const char *s);

typedef double (*series_fn)(const sample *s);
static double f_hourly(const sample *s) { return s->hourly; }
static double f_cost(const sample *s) { return s->cost; }
static double f_nodes(const sample *s) { return s->nodes[0] + s->nodes[1] + s->nodes[2]; }
static double f_spot(const sample *s) { return s->nodes[DT_CT_SPOT]; }
static double f_pending(const sample *s) { return (double)s->pending; }
static double f_cpu_util(const sample *s) { return s->cpu_alloc > 0 ? 100 * s->cpu_req / s->cpu_alloc : 0; }
static double f_mem_util(const sample *s) { return s->mem_alloc > 0 ? 100 * s->mem_req / s->mem_alloc : 0; }
static double f_disrupt(const sample *s) { return (double)s->disruptions; }

static void html_chart(dt_buf *b, const char *title, const char *unit, series_fn f, const run *runs, size_t n) {
  const double W = 640, H = 220, L = 60, R = 10, T = 28, B = 30;
  double tmax = 1, ymax = 0;
  for (size_t i = 0; i < n; i++)
    for (size_t k = 0; k < runs[i].series.n; k++) {
      const sample *s = &runs[i].series.v[k];
      if ((double)s->t > tmax) tmax = (double)s->t;
      if (f(s) > ymax) ymax = f(s);
    }
  if (ymax <= 0) ymax = 1;
  double mag = pow(10, floor(log10(ymax))), fr = ymax / mag; /* a round top: 1, 2, 2.5 or 5 x 10^k */
  ymax = mag * (fr <= 1 ? 1 : fr <= 2 ? 2 : fr <= 2.5 ? 2.5 : fr <= 5 ? 5 : 10);
  dt__buf_printf(b,
                 "<figure class=\"chart\"><svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %.0f %.0f\" "
                 "role=\"img\" aria-label=\"%s\">\n",
                 W, H, title);
  /* each chart carries its style, so one can be cut out as an SVG file */
  dt__buf_puts(b, "<style>text{font:10px system-ui,sans-serif;fill:#222}.title{font-weight:600;font-size:13px}"
                  ".grid{stroke:#ddd}.ylab{text-anchor:end}.xlab{text-anchor:middle}</style>\n"
                  "<rect width=\"100%\" height=\"100%\" fill=\"#fafafa\"/>\n");
  dt__buf_printf(b, "<text x=\"%.0f\" y=\"18\" class=\"title\">%s</text>\n", L, title);
  for (int g = 0; g <= 4; g++) {
    double y = T + (H - T - B) * (1 - g / 4.0);
    dt__buf_printf(b, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" class=\"grid\"/>", L, W - R, y, y);
    dt__buf_printf(b, "<text x=\"%.0f\" y=\"%.1f\" class=\"ylab\">%.3g%s</text>\n", L - 4, y + 4, ymax * g / 4.0, unit);
  }
  for (int g = 0; g <= 4; g++) {
    double x = L + (W - L - R) * g / 4.0, th = tmax * g / 4.0 / 3600;
    dt__buf_printf(b, "<text x=\"%.1f\" y=\"%.0f\" class=\"xlab\"%s>%.1fh</text>\n", x, H - 10,
                   g == 4 ? " style=\"text-anchor:end\"" : "", th);
  }
  for (size_t i = 0; i < n; i++) {
    dt__buf_printf(b, "<text x=\"%.0f\" y=\"18\" style=\"text-anchor:end;fill:%s\">",
                   W - R - 150.0 * (double)(n - 1 - i), k_colors[i % 6]);
    html_escape(b, runs[i].label);
    dt__buf_puts(b, "</text>\n");
  }
  for (size_t i = 0; i < n; i++) {
    dt__buf_printf(
        b, "<polyline class=\"series\" data-run=\"%zu\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"", i,
        k_colors[i % 6]);
    for (size_t k = 0; k < runs[i].series.n; k++) {
      const sample *s = &runs[i].series.v[k];
      double x = L + (W - L - R) * (double)s->t / tmax, y = T + (H - T - B) * (1 - f(s) / ymax);
      dt__buf_printf(b, "%.1f,%.1f ", x, y);
    }
    dt__buf_puts(b, "\"/>\n");
  }
  dt__buf_puts(b, "</svg></figure>\n");
}

static void html_escape(dt_buf *b, const char *s) {
  for (; *s; s++) {
    if (*s == '<')
      dt__buf_puts(b, "&lt;");
    else if (*s == '>')
      dt__buf_puts(b, "&gt;");
    else if (*s == '&')
      dt__buf_puts(b, "&amp;");
    else if (*s == '"')
      dt__buf_puts(b, "&quot;");
    else
      dt__buf_putc(b, *s);
  }
}

int write_report(const char *path, run *runs, const summary *ss, size_t n, dt_error *err) {
  dt_buf b = {0};
  dt__buf_puts(&b,
               "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>dovetail simulate</title>\n"
               "<style>body{font:14px system-ui,sans-serif;margin:24px;color:#222}"
               "table{border-collapse:collapse}td,th{padding:4px 10px;border-bottom:1px solid #ddd;text-align:right}"
               "th:first-child,td:first-child{text-align:left}.charts{margin-top:18px;display:grid;grid-template-"
               "columns:repeat(auto-fill,minmax(520px,1fr));gap:12px}"
               "figure{margin:0}svg{width:100%;height:auto}"
               ".swatch{display:inline-block;width:12px;height:12px;margin-right:6px;vertical-align:middle}</style>\n"
               "</head><body>\n<h1>dovetail simulate</h1>\n");
  const sample *last = runs[0].series.n ? &runs[0].series.v[runs[0].series.n - 1] : NULL;
  dt__buf_printf(&b, "<p>%.1f simulated hours, seed %llu, %zu pods.</p>\n", last ? (double)last->t / 3600 : 0.0,
                 (unsigned long long)runs[0].in->seed, ss[0].pods);
  dt__buf_puts(
      &b,
      "<table id=\"summary\"><thead><tr><th>run</th><th>cost ($)</th><th>$ per pod-hour</th><th>p50 pending (s)</th>"
      "<th>p99 pending (s)</th><th>nodes launched</th><th>disruptions</th><th>interruptions</th>"
      "<th>pending at end</th><th>policy errors</th></tr></thead><tbody>\n");
  for (size_t i = 0; i < n; i++) {
    dt__buf_printf(&b, "<tr><td><span class=\"swatch\" style=\"background:%s\"></span>", k_colors[i % 6]);
    html_escape(&b, runs[i].label);
    dt__buf_printf(&b,
                   "</td><td>%.2f</td><td>%.4f</td><td>%.0f</td><td>%.0f</td><td>%zu</td><td>%zu</td><td>%zu</td>"
                   "<td>%zu</td><td>%zu</td></tr>\n",
                   ss[i].cost, ss[i].cost_per_pod_hour, ss[i].wait_p50, ss[i].wait_p99, ss[i].launches,
                   ss[i].disruptions, ss[i].interruptions, ss[i].pending_end, ss[i].policy_errors);
  }
  dt__buf_puts(&b, "</tbody></table>\n<div class=\"charts\">\n");
  html_chart(&b, "Hourly cost ($/h)", "", f_hourly, runs, n);
  html_chart(&b, "Cumulative cost ($)", "", f_cost, runs, n);
  html_chart(&b, "Nodes", "", f_nodes, runs, n);
  html_chart(&b, "Spot nodes", "", f_spot, runs, n);
  html_chart(&b, "Pending pods", "", f_pending, runs, n);
  html_chart(&b, "CPU requested / allocatable", "%", f_cpu_util, runs, n);
  html_chart(&b, "Memory requested / allocatable", "%", f_mem_util, runs, n);
  html_chart(&b, "Disruptions (cumulative)", "", f_disrupt, runs, n);
  dt__buf_puts(&b, "</div>\n</body></html>\n");
  if (b.oom) {
    dt__free(b.p);
    return dt__err(err, DT_ENOMEM, "out of memory writing the report");
  }
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "wb");
  bool ok = f && fwrite(b.p, 1, b.len, f) == b.len;
  if (f) ok &= fclose(f) == 0;
  ok = ok && rename(tmp, path) == 0;
  dt__free(b.p);
  if (!ok) {
    unlink(tmp);
    return dt__err(err, DT_EIO, "--report %s: cannot be written", path);
  }
  return 0;
}
