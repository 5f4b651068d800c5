// kf attend — run the smoothing primitive on arrays from files.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <memory>
#include <vector>

#include "attend_outputs.hpp"
#include "common.hpp"
#include "kernelformer/dist/mpi.hpp"
#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/smooth.hpp"
#include "kernelformer/smooth_partial.hpp"

namespace kf::cli {
namespace {

struct attend_options {
  std::string queries, keys, values, out, weights;
  std::string kernel = "exp_dot";
  std::string mask_text = "none";
  double bandwidth = 0, temperature = 0;
  index split = 0;
  std::vector<index> weight_rows;
  int threads = 0;
  bool quiet = false;
  bool compare_exact = false;
  bool bandwidth_given = false, temperature_given = false;
};

constexpr index kMaxWeightEntries = 200'000'000;  // 0.8–1.6 GB: beyond that, select rows

kernel_spec build_kernel(const attend_options& o) {
  kernel_spec k = kernel_parse(o.kernel);
  k.split = o.split;
  if (k.is_product() && o.split <= 0)
    throw user_error("--kernel " + o.kernel +
                     " is a product kernel: give --split S (the first S columns go to the first "
                     "factor)");
  if (!k.is_product() && o.split != 0)
    throw user_error("--split applies to product kernels (A*B) only");
  const kernel_arg arg = kernel_arg_of(k.first);
  if (o.bandwidth_given) {
    const bool rff = std::holds_alternative<kernel_rff>(k.first);
    if (k.is_product() || (arg != kernel_arg::sqdist && !rff) || kernel_name(k.first) == "uniform")
      throw user_error(fmt::format(
          "--bandwidth applies to distance kernels; {} takes --temperature (or NAME:h=… / :t=…)",
          kernel_name(k.first)));
    if (!(o.bandwidth > 0))
      throw user_error(fmt::format("--bandwidth {} must be positive", o.bandwidth));
    kernel_set_param(k.first, o.bandwidth);
  }
  if (o.temperature_given) {
    if (k.is_product() ||
        (arg != kernel_arg::dot && !std::holds_alternative<kernel_favor>(k.first)))
      throw user_error(
          fmt::format("--temperature applies to dot kernels (exp_dot, linear, "
                      "polynomial); {} takes --bandwidth",
                      kernel_name(k.first)));
    if (!(o.temperature > 0))
      throw user_error(fmt::format("--temperature {} must be positive", o.temperature));
    kernel_set_param(k.first, o.temperature);
  }
  if (o.compare_exact && (k.is_product() || !kernel_exact_counterpart(k.first)))
    throw user_error(fmt::format(
        "--compare-exact applies to random-feature kernels (rff ~ gaussian, favor ~ exp_dot), "
        "not {}",
        kernel_describe(k)));
  return k;
}

template <class T>
void run_typed(const attend_options& o, const loaded_array& q, const loaded_array& k,
               const loaded_array& v, const kernel_spec& kern, const mask& msk) {
  // Mapped .npy inputs of dtype T are used in place; the rest are converted once.
  matrix<T> q_scratch, k_scratch, v_scratch;
  const const_matrix_view<T> qm = q.as<T>(q_scratch), km = k.as<T>(k_scratch),
                             vm = v.as<T>(v_scratch);
  smooth_options opt;
  opt.threads = o.threads;
  matrix<T> out(qm.rows, vm.cols);
  smooth_stats st;
  if (dist::size() == 1) {
    st = smooth_forward<T>(out.view(), {}, qm, km, vm, kern, msk, opt);
  } else {
    // Under mpirun: this rank's block of keys, merged at rank 0 (smooth_partial.hpp).
    const dist::range r = dist::my_shard(km.rows);
    smooth_state<T> s =
        smooth_partial<T>(qm, km.block(r.lo, 0, r.size(), km.cols),
                          vm.block(r.lo, 0, r.size(), vm.cols), r.lo, km.rows, kern, msk, opt);
    dist::reduce_state(s);
    if (!dist::is_root()) return;  // rank 0 writes
    out = std::move(s.out);
    st.empty_rows = smooth_state_empty_rows(s);
  }
  matrix<T> w;
  if (!o.weights.empty()) {
    const index nr = o.weight_rows.empty() ? qm.rows : static_cast<index>(o.weight_rows.size());
    if (nr * km.rows > kMaxWeightEntries)
      throw user_error(
          fmt::format("--weights would be {} x {} = {} entries; choose rows with "
                      "--weight-rows",
                      nr, km.rows, nr * km.rows));
    for (index r : o.weight_rows)
      if (r < 0 || r >= qm.rows)
        throw user_error(fmt::format("--weight-rows: row {} is outside 0..{}", r, qm.rows - 1));
    w = matrix<T>(nr, km.rows);
    smooth_weights<T>(w.view(), o.weight_rows, qm, km, kern, msk, opt);
  }
  // Without a mask and with a kernel that is positive everywhere, an empty row is a weight that
  // underflowed, not one the math gives: the output would be a 0 the math does not produce.
  // (A feature-map kernel's empty row is a normalizer ≤ 0 — rff's signed features — and is warned
  // about below instead.)
  const bool positive_everywhere = !kernel_compact(kern.first) &&
                                   !(kern.second && kernel_compact(*kern.second)) &&
                                   !kernel_is_feature_map(kern.first);
  if (st.empty_rows > 0 && positive_everywhere && msk.describe() == "none")
    throw user_error(fmt::format(
        "{} query rows have every kernel weight below the floating-point range ({}: the "
        "nearest key is too many bandwidths away); a larger bandwidth, or inputs in other "
        "units, is needed — nothing was written",
        st.empty_rows, kernel_describe(kern)));
  // Staged only now, after every input was read: both files appear, or neither.
  io::atomic_writer writer;
  stage_output<T>(writer, o.out, out.cview());
  if (!o.weights.empty()) stage_output<T>(writer, o.weights, w.cview());
  writer.commit();
  if (o.quiet) return;
  const char* dtype = std::is_same_v<T, float> ? "float32" : "float64";
  fmt::print(
      "kf attend: {} queries x {} keys (d = {}, dv = {}, {}), kernel {}, mask {}, route {}{}\n",
      qm.rows, km.rows, qm.cols, vm.cols, dtype,
      kernel_describe(kernel_resolve(kern, qm.cols, std::is_same_v<T, float>)), msk.describe(),
      dist::size() == 1 ? smooth_route_name(st.route) : "partial",
      dist::size() > 1 ? fmt::format(", keys sharded over {} MPI ranks", dist::size()) : "");
  if (o.compare_exact)
    print_compare_exact<T>(qm, km, vm, out.cview(), kern, msk, opt, o.weight_rows);
  if (st.empty_rows > 0)
    fmt::print(stderr,
               "kf attend: warning: {} query rows had no key with nonzero weight; their output "
               "is 0 (the empty-row policy, docs/numerics.md)\n",
               st.empty_rows);
}

void run(const attend_options& o) {
  require_extension(o.out, "--out", {".npy", ".csv"});
  check_output_path(o.out, "--out");
  if (!o.weights.empty()) {
    require_extension(o.weights, "--weights", {".npy", ".csv"});
    check_output_path(o.weights, "--weights");
  }
  if (!o.weight_rows.empty() && o.weights.empty())
    throw user_error("--weight-rows needs --weights FILE");
  const kernel_spec kern = build_kernel(o);
  const mask msk = mask::parse(o.mask_text);
  const loaded_array q = load_array(o.queries, "--queries");
  const loaded_array k = load_array(o.keys, "--keys");
  const loaded_array v = load_array(o.values, "--values");
  if (q.cols() != k.cols())
    throw user_error(
        fmt::format("{} has {} columns but {} has {}: queries and keys need the same "
                    "feature dimension d",
                    q.path, q.cols(), k.path, k.cols()));
  if (v.rows() != k.rows())
    throw user_error(fmt::format("{} has {} rows but {} has {}: one value row per key", v.path,
                                 v.rows(), k.path, k.rows()));
  const bool all_f32 = q.dtype == io::npy_dtype::f32 && k.dtype == io::npy_dtype::f32 &&
                       v.dtype == io::npy_dtype::f32;
  if (all_f32)
    run_typed<float>(o, q, k, v, kern, msk);
  else
    run_typed<double>(o, q, k, v, kern, msk);
}

}  // namespace

void add_attend(CLI::App& app) {
  auto o = std::make_shared<attend_options>();
  CLI::App* sub = app.add_subcommand(
      "attend",
      "Smooth values over keys for each query: out_i = sum_j K(q_i,k_j) v_j / sum_j K(q_i,k_j).\n"
      "Inputs are .npy (float32/float64, C order, 1-D or 2-D) or .csv; the output has the input "
      "dtype\n(float64 if the inputs mix dtypes or come from CSV).");
  sub->add_option("--queries,-q", o->queries, "Q: n x d queries (.npy or .csv)")->required();
  sub->add_option("--keys,-k", o->keys, "K: m x d keys")->required();
  sub->add_option("--values,-v", o->values, "V: m x dv values (one row per key)")->required();
  sub->add_option("--out,-o", o->out, "output n x dv (.npy or .csv), written atomically")
      ->required();
  sub->add_option("--kernel", o->kernel,
                  "kernel NAME[:key=value,...], or a product A*B with --split; names: gaussian "
                  "(rbf), laplacian, cauchy, rational_quadratic, periodic, locally_periodic, "
                  "boxcar, epanechnikov, biweight, triweight, tricube, cosine, uniform, "
                  "inverse_distance, exp_dot, linear, polynomial; feature maps (linear time): "
                  "elu1, rff[:features=R,seed=S] (~ gaussian), favor[:features=R,seed=S] "
                  "(~ exp_dot)")
      ->capture_default_str();
  auto* bw = sub->add_option("--bandwidth,-b", o->bandwidth,
                             "bandwidth h of a distance kernel (> 0); same as NAME:h=H");
  auto* tp = sub->add_option("--temperature,-t", o->temperature,
                             "temperature T of a dot kernel: exp(q.k / T); default sqrt(d)");
  bw->excludes(tp);
  sub->add_option("--mask,-m", o->mask_text,
                  "none | causal[:OFFSET] | window:W[,R] | padding:LEN | radius:R | topk:K | "
                  "knn:K, joined with & or | (topk/knn last), e.g. causal&window:16")
      ->capture_default_str();
  sub->add_option("--split", o->split, "product kernel: columns [0, S) go to the first factor");
  sub->add_option("--weights,-w", o->weights,
                  "also write the normalized weight matrix (n x m, or the --weight-rows rows)");
  sub->add_option("--weight-rows", o->weight_rows, "query rows of the weight matrix to write")
      ->delimiter(',');
  sub->add_option("--threads", o->threads, "threads (0: all cores)")->capture_default_str();
  sub->add_flag("--quiet", o->quiet, "print nothing on success");
  sub->add_flag("--compare-exact", o->compare_exact,
                "rff/favor: also print the relative error of the outputs and of the weights on "
                "sampled rows (--weight-rows, else 8) against the exact kernel they approximate");
  sub->footer(
      "Examples:\n"
      "  kf attend -q Q.npy -k K.npy -v V.npy -o OUT.npy                 # softmax attention\n"
      "  kf attend -q Q.npy -k K.npy -v V.npy --kernel gaussian -b 0.3 -o OUT.npy\n"
      "  kf attend -q X.csv -k X.csv -v Y.csv --kernel epanechnikov:h=0.5 --mask knn:10 -o F.csv\n"
      "  kf attend -q Q.npy -k K.npy -v V.npy --mask causal --weights W.npy -o OUT.npy\n"
      "  kf attend ... --kernel 'exp_dot*gaussian:h=2' --split 64        # content x position\n"
      "  kf attend ... --kernel favor:features=256 --mask causal --compare-exact  # linear time\n"
      "  mpirun -np 4 kf attend -q Q.npy -k K.npy -v V.npy -o OUT.npy    # keys over 4 ranks\n"
      "Under mpirun each rank smooths its block of the keys and rank 0 merges the partial results\n"
      "(log-sum-exp rescaling) and writes; top-k/knn masks rank all keys at once and are refused.");
  sub->callback([o, bw, tp] {
    o->bandwidth_given = bw->count() > 0;
    o->temperature_given = tp->count() > 0;
    run(*o);
  });
}

}  // namespace kf::cli
