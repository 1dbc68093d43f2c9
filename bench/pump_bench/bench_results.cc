#include "bench/pump_bench/bench_results.h"

#include <algorithm>
#include <cstdio>

namespace pump::bench {

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

namespace {

const ConfigResult* find_row(const std::vector<ConfigResult>& rows, const ConfigResult& like, const char* config) {
  for (const ConfigResult& r : rows)
    if (r.workload == like.workload && r.ratio == like.ratio && r.config == config && r.ran) return &r;
  return nullptr;
}

}  // namespace

void finalize_comparisons(std::vector<ConfigResult>* results) {
  for (ConfigResult& r : *results) {
    if (!r.ran || r.samples_seconds.empty()) continue;
    r.median_seconds = median_of(r.samples_seconds);
    r.min_seconds = *std::min_element(r.samples_seconds.begin(), r.samples_seconds.end());
    r.max_seconds = *std::max_element(r.samples_seconds.begin(), r.samples_seconds.end());
  }
  for (ConfigResult& r : *results) {
    if (!r.ran || r.median_seconds <= 0) continue;
    if (const ConfigResult* none = find_row(*results, r, "none"); none && none->median_seconds > 0)
      r.speedup_vs_none = none->median_seconds / r.median_seconds;
    if (const ConfigResult* oracle = find_row(*results, r, "oracle"); oracle && oracle->traffic_bytes() > 0)
      r.traffic_vs_oracle = static_cast<double>(r.traffic_bytes()) / static_cast<double>(oracle->traffic_bytes());
    if (r.bound_seconds > 0) r.ratio_to_bound = r.median_seconds / r.bound_seconds;
    else if (const ConfigResult* bound = find_row(*results, r, "bound"); bound && bound->median_seconds > 0)
      r.ratio_to_bound = r.median_seconds / bound->median_seconds;
  }
}

double link_bound_seconds(double compute_seconds, uint64_t bytes_in, uint64_t bytes_out, const LinkRates& link,
                          size_t links) {
  double t = compute_seconds;
  if (!link.known()) return t;
  const double share = 1.0 / static_cast<double>(std::max<size_t>(links, 1));
  const double in = static_cast<double>(bytes_in) * share, out = static_cast<double>(bytes_out) * share;
  t = std::max(t, in / link.in);
  t = std::max(t, out / link.out);
  t = std::max(t, (in + out) / link.both);
  return t;
}

std::string describe_link(const LinkRates& link) {
  if (!link.known()) return "link: not measured" + (link.source.empty() ? "" : " (" + link.source + ")");
  char buf[160];
  std::snprintf(buf, sizeof buf, "link: in %.1f GB/s, out %.1f GB/s, both %.1f GB/s", link.in / 1e9, link.out / 1e9,
                link.both / 1e9);
  return std::string(buf) + (link.source.empty() ? "" : " (" + link.source + ")");
}

uint64_t total_violations(const std::vector<ConfigResult>& results) {
  uint64_t n = 0;
  for (const ConfigResult& r : results) n += r.violations;
  return n;
}

}  // namespace pump::bench
