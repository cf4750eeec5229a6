// SPDX-License-Identifier: MIT
// Transfer between shapes (issue 19, tuning that converges in a minute): a search for sizes S
// starts from the configuration tuned for the nearest other sizes of the same expression (or of
// its bare product, for a product with an epilogue), types, precision and device - a parameter
// file in the folder the new one is written to, or under tune_options::start_from - carried over
// to S: per dimension the same threads, register tile, shared-memory steps and mapping, the
// block count whose chunk is nearest the tuned chunk, the input and kernel choices and the
// tensor-core tiles unchanged. Nearby shapes of one expression tend to share their good tilings
// (the premise of FamilySeer's families, seed 002), and a start costs one evaluation.
// Without a record of this device, a record of another device of the same architecture (CUDA,
// the same compute capability: an H200's files on an H100) is carried over the same way: a
// tiling tuned there is a better start than the generic ones (on an H100 the H200's 1024^3 matmul
// configuration ran 997x1009x769 in 73 us; the product starts' best, 134 us). It is only a start:
// the search measures it here, and the parameter file written is this device's.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include <mdh/error.hpp>
#include <mdh/ir/computation.hpp>
#include <mdh/lower/check.hpp>
#include <mdh/lower/config.hpp>
#include <mdh/tuning/parameter_file.hpp>
#include <tuning/search_space.hpp>

namespace mdh::tuning {

// `c`, tuned at sizes `from`, carried over to sizes `to` (see the header comment). Whether the
// result is valid at `to` is lower::check's to say.
inline lower::config carry_over(lower::config c, const std::vector<std::int64_t>& from,
                                const std::vector<std::int64_t>& to) {
  for (std::size_t d = 0; d < to.size() && d < c.dims.size(); ++d) {
    lower::dim_config& x = c.dims[d];
    const std::int64_t n = to[d];
    const std::int64_t steps = tile_steps(x, from[d]);
    const double chunk = double(lower::ceil_div(from[d], x.blk));
    // within the space's bounds at the new extent
    x.thr = std::min(x.thr, detail::pow2_ceil(n));
    for (std::int64_t t : {8, 6, 4, 3, 2, 1})
      if (x.t_rm > n && t <= n && t < x.t_rm) x.t_rm = t;
    std::int64_t best = 1;
    double off = std::numeric_limits<double>::infinity();
    for (std::int64_t b : detail::block_counts(n)) {
      const double o = std::abs(std::log(double(lower::ceil_div(n, b)) / chunk));
      if (o < off) off = o, best = b;
    }
    x.blk = best;
    x.t_sm = tile_from_steps(steps, x, n);
  }
  return c;
}

// The sizes' distance: how many factors of e separate them, summed over the dimensions.
inline double shape_distance(const std::vector<std::int64_t>& a,
                             const std::vector<std::int64_t>& b) {
  double s = 0;
  for (std::size_t d = 0; d < a.size(); ++d) s += std::abs(std::log(double(a[d]) / double(b[d])));
  return s;
}

// Whether records of device `r` may start a search on device `d` when `d` has none: another
// CUDA device of the same compute capability (OpenCL devices have no architecture to compare).
inline bool same_architecture(const device_id& r, const device_id& d) {
  return r.backend == d.backend && r.backend == "cuda" && !d.compute_capability.empty() &&
         r.compute_capability == d.compute_capability;
}

// The parameter files a search may start from: those in the folder of `file` (the parameter file
// the run writes), then every parameter file under each folder of `elsewhere` (e.g. a device's
// committed parameter folder, tune_options::start_from).
inline std::vector<std::filesystem::path> start_candidate_files(
    const std::filesystem::path& file, const std::vector<std::filesystem::path>& elsewhere) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  std::error_code ec;
  if (!file.empty()) {
    const fs::path folder = file.parent_path().empty() ? fs::path(".") : file.parent_path();
    if (fs::is_directory(folder, ec))
      for (auto& e : fs::directory_iterator(folder, ec))
        if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
  }
  for (auto& where : elsewhere)
    if (fs::is_directory(where, ec))
      for (auto& e : fs::recursive_directory_iterator(where, ec))
        if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());  // deterministic choice among equals
  files.erase(std::unique(files.begin(), files.end()), files.end());
  return files;
}

// The start carried over from the nearest other shape's parameter file (start_candidate_files)
// of this expression - or, for a product with an epilogue, of the bare product, whose tiling is
// the same (at these very sizes, the bare product is product_start's) - at the same types,
// precision and device, as a point of the space; none when no such record exists or the
// carried configuration is not valid at `sizes`.
inline std::optional<atf::configuration> nearest_shape_start(
    const std::filesystem::path& file, const ir::computation& c,
    const std::vector<std::int64_t>& sizes, const device_id& dev,
    const lower::device_limits& limits, const std::vector<std::filesystem::path>& elsewhere = {},
    const space_options& space = {}) {
  if (file.empty() && elsewhere.empty()) return std::nullopt;
  const workload here = workload::of(c, sizes);
  std::optional<workload> product_here;
  if (c.epilogue) {
    ir::computation product = c;
    product.epilogue.reset();
    product_here = workload::of(product, sizes);
  }
  std::optional<parameter_record> nearest;
  double nearest_distance = std::numeric_limits<double>::infinity();
  bool nearest_here = false;  // of this very device: preferred to any of another
  for (auto& f : start_candidate_files(file, elsewhere)) {
    parameter_record r;
    try {
      r = read_parameter_file(f);
    } catch (const std::exception&) {  // other JSON, or a file tune() reports elsewhere
      continue;
    }
    const bool this_device = r.device == dev;
    if (!this_device && !same_architecture(r.device, dev)) continue;
    // this device's record of these very sizes is parameter_file_start's (this expression) or
    // product_start's (the bare product), from the same folders; another device's is a start here
    if (r.work.sizes.size() != sizes.size() || (this_device && r.work.sizes == sizes)) continue;
    auto fits = [&](workload w) {
      w.sizes = r.work.sizes;
      return mismatch(r, w, r.device).empty();
    };
    if (!fits(here) && !(product_here && fits(*product_here))) continue;
    const double distance = shape_distance(r.work.sizes, sizes);
    if (std::pair(!this_device, distance) < std::pair(!nearest_here, nearest_distance))
      nearest_distance = distance, nearest_here = this_device, nearest = std::move(r);
  }
  if (!nearest) return std::nullopt;
  try {
    lower::config cfg =
        carry_over(lower::config_from_json(nearest->configuration, c), nearest->work.sizes, sizes);
    lower::check(cfg, c, sizes, limits);
    return to_space_configuration(cfg, c, sizes, limits, space);
  } catch (const std::exception&) {  // not valid here (check), or a configuration of old
    return std::nullopt;
  }
}

}  // namespace mdh::tuning
