// The bad-input suite: kf run on broken files, bad parameters and extreme numbers, each case
// checked by the harness of bad_inputs.hpp (non-zero exit status, no signal, the message names
// what is wrong, outputs untouched). Classes: npy, csv, safetensors (and the models built from
// them), corpus text, parameters, output paths, numerics. HTTP and kill -9 cases are in
// test_bad_http_kill.cpp. docs/reliability.md lists the classes and what each gets.
#include <gtest/gtest.h>

#include <initializer_list>
#include <set>

#include "inputs.hpp"

namespace kf::bad {
namespace {

// attend -q Q -k K -v V -o {out}/o.npy with one file replaced.
bad_case attend(const std::string& name, const std::string& q, const std::string& k,
                const std::string& v, std::vector<std::string> expect,
                const std::string& extra = "") {
  return {name,
          "attend -q {in}/" + q + " -k {in}/" + k + " -v {in}/" + v + " -o {out}/o.npy " + extra,
          std::move(expect),
          {"o.npy"}};
}
bad_case smooth(const std::string& name, const std::string& file, std::vector<std::string> expect,
                const std::string& extra = "") {
  return {name,
          "smooth {in}/" + file + " --x x --y y --out {out}/fit.csv " + extra,
          std::move(expect),
          {"fit.csv"}};
}
bad_case predict(const std::string& name, const std::string& model, std::vector<std::string> expect,
                 const std::string& input = "x99.npy") {
  return {name,
          "predict --model {in}/" + model + " --input {in}/" + input + " --out {out}/y.npy",
          std::move(expect),
          {"y.npy"}};
}
bad_case sample(const std::string& name, const std::string& model, std::vector<std::string> expect,
                const std::string& extra = "") {
  return {name, "sample --model {in}/" + model + " --tokens 5 " + extra, std::move(expect), {}};
}
bad_case train(const std::string& name, const std::string& extra, std::vector<std::string> expect) {
  return {name,
          "train periodic --config quick --epochs 1 --save {out}/m.safetensors --out {out}/run " +
              extra,
          std::move(expect),
          {"m.safetensors"}};
}
bad_case series(const std::string& name, const std::string& extra,
                std::vector<std::string> expect) {
  return {name,
          "train series " + extra + " --epochs 1 --save {out}/m.safetensors --out {out}/run",
          std::move(expect),
          {"m.safetensors"}};
}
bad_case train_lm(const std::string& name, const std::string& extra,
                  std::vector<std::string> expect) {
  return {name,
          "train lm --iters 2 --save {out}/lm.safetensors " + extra,
          std::move(expect),
          {"lm.safetensors"}};
}

bad_case train_s2s(const std::string& name, const std::string& extra,
                   std::vector<std::string> expect) {
  return {name,
          "train seq2seq --steps 2 --save {out}/s2s.safetensors --out {out}/run " + extra,
          std::move(expect),
          {"s2s.safetensors"}};
}

// The groups below, in this order, make the Files and Parameters suites.
std::vector<bad_case> concat(std::initializer_list<std::vector<bad_case>> groups) {
  std::vector<bad_case> all;
  for (const auto& g : groups) all.insert(all.end(), g.begin(), g.end());
  return all;
}

// Broken, mismatched or non-finite .npy inputs of kf attend.
std::vector<bad_case> npy_cases() {
  return {
      attend("npy_missing", "nope.npy", "k.npy", "v.npy", {"nope.npy"}),
      attend("npy_directory", "dir.npy", "k.npy", "v.npy", {"dir.npy"}),
      attend("npy_empty_file", "empty.npy", "k.npy", "v.npy", {"empty.npy"}),
      attend("npy_bad_magic", "magic.npy", "k.npy", "v.npy", {"magic.npy"}),
      attend("npy_truncated_data", "trunc.npy", "k.npy", "v.npy", {"trunc.npy"}),
      attend("npy_shape_wraps", "wrap.npy", "k.npy", "v.npy", {"wrap.npy"}),
      attend("npy_int_dtype", "i8.npy", "k.npy", "v.npy", {"i8.npy", "<i8"}),
      attend("npy_three_dims", "3d.npy", "k.npy", "v.npy", {"3d.npy"}),
      attend("npy_negative_dim", "neg.npy", "k.npy", "v.npy", {"neg.npy"}),
      attend("npy_header_garbage", "garbage.npy", "k.npy", "v.npy", {"garbage.npy"}),
      attend("npy_header_length", "hdrlen.npy", "k.npy", "v.npy", {"hdrlen.npy"}),
      attend("npy_nan", "nan.npy", "k.npy", "v.npy", {"nan.npy", "row", "column"}),
      attend("npy_inf_key", "q.npy", "inf.npy", "v5.npy", {"inf.npy", "row", "column"}),
      attend("npy_columns_differ", "q3.npy", "k.npy", "v.npy", {"3", "2"}),
      attend("npy_value_rows_differ", "q.npy", "k.npy", "v7.npy", {"7", "6"}),
  };
}

// Broken, non-finite or degenerate CSV tables (kf smooth, kde, attend).
std::vector<bad_case> csv_cases() {
  return {
      smooth("csv_missing_file", "nope.csv", {"nope.csv"}),
      {"csv_missing_column",
       "smooth {in}/data.csv --x nope --y y --out {out}/fit.csv",
       {"nope", "data.csv"},
       {"fit.csv"}},
      smooth("csv_text_cell", "text.csv", {"text.csv", "line 5", "oops"}),
      smooth("csv_blank_cell", "blank.csv", {"blank.csv", "--na drop"}),
      smooth("csv_ragged_row", "ragged.csv", {"ragged.csv", "line 3"}),
      smooth("csv_duplicate_names", "dup.csv", {"dup.csv", "x"}),
      smooth("csv_empty_file", "empty.csv", {"empty.csv"}),
      smooth("csv_header_only", "header_only.csv", {"header_only.csv"}),
      smooth("csv_nan_cell", "nan.csv", {"nan.csv", "line 3"}),
      smooth("csv_inf_cell", "inf.csv", {"inf.csv", "line 3"}),
      smooth("csv_one_row", "one.csv", {"one.csv"}),
      smooth("csv_constant_x", "const.csv", {"const.csv", "constant"}),
      {"csv_kde_missing_column",
       "kde {in}/data.csv --x nope --out {out}/d.csv",
       {"nope"},
       {"d.csv"}},
      {"csv_attend_text",
       "attend -q {in}/text.csv -k {in}/text.csv -v {in}/text.csv -o {out}/o.csv",
       {"text.csv", "line 5"},
       {"o.csv"}},
  };
}

// Broken or edited safetensors files and the models built from them (kf predict, kf sample).
std::vector<bad_case> safetensors_cases() {
  return {
      predict("st_missing", "nope.safetensors", {"nope.safetensors"}),
      predict("st_text_file", "text.safetensors", {"text.safetensors"}),
      predict("st_header_length", "hdr.safetensors", {"hdr.safetensors", "header length"}),
      predict("st_truncated", "trunc.safetensors", {"trunc.safetensors"}),
      predict("st_bad_json", "bad_json.safetensors", {"bad_json.safetensors", "JSON"}),
      predict("st_negative_d_model", "neg_dmodel.safetensors",
              {"neg_dmodel.safetensors", "d_model"}),
      predict("st_d_model_mismatch", "big_dmodel.safetensors",
              {"big_dmodel.safetensors", "d_model 4096"}),
      predict("st_heads_do_not_divide", "heads3.safetensors", {"heads3.safetensors", "heads"}),
      predict("st_unknown_kernel", "bad_kernel.safetensors", {"bad_kernel.safetensors", "kernel"}),
      predict("st_unknown_activation", "tanh.safetensors", {"tanh.safetensors", "activation"}),
      predict("st_malformed_number", "seq_text.safetensors", {"seq_text.safetensors", "seq_len"}),
      predict("st_missing_field", "no_seq_len.safetensors", {"no_seq_len.safetensors", "seq_len"}),
      predict("st_metadata_not_string", "meta_number.safetensors",
              {"meta_number.safetensors", "layers"}),
      predict("st_overlapping_tensors", "overlap.safetensors", {"overlap.safetensors", "overlap"}),
      predict("st_unsupported_dtype", "f16.safetensors", {"f16.safetensors", "F16"}),
      predict("st_huge_shape", "huge_shape.safetensors", {"huge_shape.safetensors", "head.bias"}),
      predict("st_nan_weight", "nan_weight.safetensors", {"nan_weight.safetensors", "head.bias"}),
      predict("st_unexpected_tensor", "extra.safetensors",
              {"extra.safetensors", "surprise.weight"}),
      predict("st_uncovered_bytes", "gap.safetensors", {"gap.safetensors", "no tensor"}),
      predict("st_wrong_kind", "lm.safetensors", {"lm.safetensors", "token_model"}),
      predict("st_input_columns", "sin.safetensors", {"x5.npy", "5 columns", "99"}, "x5.npy"),
      sample("lm_regressor_model", "sin.safetensors", {"sin.safetensors", "sequence_regressor"}),
      sample("lm_lm_kind_mismatch", "as_lm.safetensors", {"as_lm.safetensors"}),
      sample("lm_context_zero", "lm_context0.safetensors", {"lm_context0.safetensors", "context"}),
      sample("lm_vocab_mismatch", "lm_vocab.safetensors", {"lm_vocab.safetensors", "vocab"}),
      sample("lm_pieces_malformed", "lm_pieces.safetensors",
             {"lm_pieces.safetensors", "tokenizer_pieces"}),
      sample("lm_unknown_tokenizer", "lm_tokenizer.safetensors",
             {"lm_tokenizer.safetensors", "tokenizer"}),
  };
}

// Corpus text (kf train lm) and source/target pairs (kf train seq2seq, kf predict).
std::vector<bad_case> text_cases() {
  return {
      // corpus text
      train_lm("corpus_missing", "--corpus {in}/nope.txt", {"nope.txt"}),
      train_lm("corpus_nul_byte", "--corpus {in}/nul.txt", {"nul.txt", "NUL"}),
      train_lm("corpus_empty", "--corpus {in}/empty.csv", {"empty.csv", "empty"}),
      train_lm("corpus_too_short", "--corpus {in}/short.txt", {"--corpus", "too few"}),
      // source/target pairs
      train_s2s("pairs_missing", "--pairs {in}/nope.tsv", {"nope.tsv"}),
      train_s2s("pairs_nul_byte", "--pairs {in}/nul.tsv", {"nul.tsv:2", "control character"}),
      train_s2s("pairs_binary", "--pairs {in}/binary.csv", {"binary.csv:1"}),
      train_s2s("pairs_unclosed_quote", "--pairs {in}/quote.csv", {"quote.csv:3", "quoted"}),
      train_s2s("pairs_long_field", "--pairs {in}/long.tsv", {"long.tsv:1", "at most 256"}),
      train_s2s("pairs_too_few", "--pairs {in}/few.tsv", {"few.tsv", "at least 10"}),
      train_s2s("pairs_not_tsv_or_csv", "--pairs {in}/corpus.txt", {"corpus.txt", ".tsv"}),
      {"s2s_predict_long_line",
       "predict --model {in}/s2s.safetensors --input {in}/corpus.txt --out {out}/y.txt",
       {"corpus.txt:1", "at most"},
       {"y.txt"}},
      {"s2s_predict_language_model",
       "predict --model {in}/lm.safetensors --text abc --out {out}/y.txt",
       {"lm.safetensors", "kf train seq2seq"},
       {"y.txt"}},
  };
}

std::vector<bad_case> file_cases() {
  return concat({npy_cases(), csv_cases(), safetensors_cases(), text_cases()});
}

// Kernel, bandwidth, mask and method options of kf attend, smooth and kde.
std::vector<bad_case> smoothing_parameter_cases() {
  return {
      attend("param_unknown_kernel", "q.npy", "k.npy", "v.npy", {"bogus"}, "--kernel bogus"),
      attend("param_negative_bandwidth", "q.npy", "k.npy", "v.npy", {"bandwidth"},
             "--kernel gaussian -b -1"),
      attend("param_nan_bandwidth", "q.npy", "k.npy", "v.npy", {"bandwidth"},
             "--kernel gaussian -b nan"),
      attend("param_bad_window_mask", "q.npy", "k.npy", "v.npy", {"window"}, "--mask window:abc"),
      attend("param_unknown_mask", "q.npy", "k.npy", "v.npy", {"sideways"}, "--mask sideways"),
      attend("param_weight_rows", "q.npy", "k.npy", "v.npy", {"--weight-rows", "99"},
             "--weights {out}/w.npy --weight-rows 99"),
      smooth("param_smooth_bandwidth", "data.csv", {"--bandwidth"}, "--bandwidth -1"),
      smooth("param_smooth_method", "data.csv", {"bogus"}, "--method bogus"),
      smooth("param_smooth_na", "data.csv", {"--na"}, "--na maybe"),
      {"param_kde_bandwidth",
       "kde {in}/data.csv --x x --bandwidth 0 --out {out}/d.csv",
       {"bandwidth"},
       {"d.csv"}},
      {"param_kde_kernel",
       "kde {in}/data.csv --x x --kernel bogus --out {out}/d.csv",
       {"bogus"},
       {"d.csv"}},
  };
}

// kf train periodic (resume included) and kf train series options.
std::vector<bad_case> training_parameter_cases() {
  return {
      train("param_function", "--function cosine", {"cosine"}),
      {"param_config",
       "train periodic --config huge --save {out}/m.safetensors",
       {"huge"},
       {"m.safetensors"}},
      train("param_epochs", "--epochs -1", {"--epochs"}),
      train("param_dropout", "--dropout 1.5", {"--dropout"}),
      train("param_lr", "--lr -1", {"--lr"}),
      train("param_save_every_negative", "--save-every -1", {"--save-every"}),
      {"param_save_every_without_save",
       "train periodic --config quick --save-every 2",
       {"--save-every needs --save"},
       {}},
      train("param_resume_missing", "--resume {in}/nope.safetensors", {"nope.safetensors"}),
      train("param_resume_final_model", "--resume {in}/sin.safetensors",
            {"sin.safetensors", "no training state"}),
      {"param_resume_other_options",
       "train periodic --config quick --epochs 2 --batch 32 --resume {in}/state.safetensors "
       "--save {out}/m.safetensors",
       {"state.safetensors", "--batch"},
       {"m.safetensors"}},
      train("param_resume_not_safetensors", "--resume {in}/q.npy", {"--resume", ".safetensors"}),
      series("series_missing_value", "{in}/blank.csv --y y --x x",
             {"blank.csv", "line 3", "missing", "--fill"}),
      series("series_text_cell", "{in}/text.csv --y y", {"text.csv", "line 5", "oops"}),
      series("series_too_short", "{in}/data.csv --y y --x x --window 20",
             {"data.csv", "30 values", "window of 20"}),
      series("series_unknown_column", "{in}/data.csv --y nope", {"data.csv", "nope"}),
      series("series_period_beyond_window", "{in}/data.csv --y y --window 5 --period 7",
             {"period of 7", "window of 5"}),
      series("series_fill", "{in}/data.csv --y y --fill zero", {"--fill", "zero"}),
  };
}

// kf train lm / seq2seq, kf sample and kf attention options.
std::vector<bad_case> language_model_parameter_cases() {
  return {
      train_lm("param_tokenizer", "--tokenizer bpe --corpus {in}/corpus.txt", {"bpe"}),
      train_lm("param_val_fraction", "--val-fraction 0.95 --corpus {in}/corpus.txt",
               {"--val-fraction"}),
      train_s2s("param_seq2seq_task", "--task sort", {"--task", "sort"}),
      train_s2s("param_seq2seq_steps_and_epochs", "--epochs 2", {"--steps or --epochs"}),
      train_s2s("param_seq2seq_max_length", "--max-length 500", {"--max-length"}),
      sample("param_temperature", "lm.safetensors", {"--temperature"}, "--temperature -1"),
      sample("param_top_k", "lm.safetensors", {"--top-k"}, "--top-k -1"),
      sample("param_tokens", "lm.safetensors", {"--tokens"}, "--tokens -5"),
      sample("param_empty_prompt", "lm.safetensors", {"--prompt"}, "--prompt ''"),
      {"param_attention_layer",
       "attention --model {in}/lm.safetensors --layer 9 --out {out}/a.png",
       {"--layer", "9"},
       {"a.png"}},
      {"param_attention_head",
       "attention --model {in}/lm.safetensors --head 9 --out {out}/a.png",
       {"--head", "9"},
       {"a.png"}},
  };
}

// Unknown subcommands and options, a missing required option, and bad output paths.
std::vector<bad_case> command_line_cases() {
  return {
      {"param_unknown_subcommand", "frobnicate", {"frobnicate"}, {}},
      {"param_unknown_option",
       "attend -q {in}/q.npy -k {in}/k.npy -v {in}/v.npy -o {out}/o.npy --frobnicate 3",
       {"--frobnicate"},
       {"o.npy"}},
      {"param_seeds_text", "experiment periodic --seeds 1,x --out {out}/e", {"--seeds 'x'"}, {}},
      {"param_missing_required",
       "predict --input {in}/x99.npy --out {out}/y.npy",
       {"--model"},
       {"y.npy"}},
      // output paths, checked before any work
      {"out_missing_folder",
       "attend -q {in}/q.npy -k {in}/k.npy -v {in}/v.npy -o {out}/no/o.npy",
       {"no/o.npy"},
       {}},
      {"out_wrong_extension",
       "attend -q {in}/q.npy -k {in}/k.npy -v {in}/v.npy -o {out}/o.txt",
       {"o.txt"},
       {}},
      {"out_is_a_folder", "smooth {in}/data.csv --x x --y y --out {in}/dir.npy", {"dir.npy"}, {}},
      {"out_attention_extension",
       "attention --model {in}/lm.safetensors --out {out}/a.jpg",
       {"a.jpg"},
       {}},
  };
}

std::vector<bad_case> parameter_cases() {
  return concat({smoothing_parameter_cases(), training_parameter_cases(),
                 language_model_parameter_cases(), command_line_cases()});
}

std::vector<bad_case> numeric_cases() {
  return {
      attend("num_ratio_beyond_float64", "huge.npy", "huge.npy", "v5.npy",
             {"bandwidth", "floating-point range"}, "--kernel gaussian -b 1e-10"),
      attend("num_weights_underflow", "grid.npy", "v5.npy", "v5.npy",
             {"4 query rows", "floating-point range"}, "--kernel gaussian -b 1e-160"),
      smooth("num_huge_x", "huge.csv", {"huge.csv", "x", "1e150"}),
      smooth("num_tiny_spread_x", "tiny.csv", {"tiny.csv", "x", "1e-150"}),
      smooth("num_huge_y", "bigy.csv", {"bigy.csv", "y", "1e150"}),
      {"num_kde_huge_x",
       "kde {in}/huge.csv --x x --out {out}/d.csv",
       {"huge.csv", "1e150"},
       {"d.csv"}},
      {"num_kde_tiny_spread",
       "kde {in}/tiny.csv --x x --out {out}/d.csv",
       {"tiny.csv", "1e-150"},
       {"d.csv"}},
      attend("num_float32_ratio", "q_f4.npy", "k_f4.npy", "v_f4.npy",
             {"bandwidth", "floating-point range"}, "--kernel gaussian -b 1e-40"),
  };
}

class BadInput : public ::testing::TestWithParam<bad_case> {};

}  // namespace
void PrintTo(const bad_case& c, std::ostream* os) { *os << "kf " << c.args; }
namespace {

TEST_P(BadInput, FailsCleanlyNamesTheCauseAndWritesNothing) {
  const bad_case& c = GetParam();
  const std::string in = inputs_dir(), out = in + "/../cases/" + c.name;
  fs::remove_all(out);
  fs::create_directories(out);
  for (const auto& o : c.outputs) put(out + "/" + o, kSentinel);
  const run_result r = run_kf_raw(expand(c.args, in, out));
  ASSERT_TRUE(WIFEXITED(r.status)) << "killed by a signal\n" << r.output;
  const int code = WEXITSTATUS(r.status);
  EXPECT_NE(code, 0) << r.output;
  EXPECT_LT(code, 128) << "a crash (signal " << code - 128 << ")\n" << r.output;
  for (const auto& e : c.expect)
    EXPECT_NE(r.output.find(expand(e, in, out)), std::string::npos)
        << "the message does not name '" << e << "':\n"
        << r.output;
  EXPECT_LE(r.output.size(), 2000u) << "a message of " << r.output.size() << " characters";
  std::set<std::string> left;
  for (const auto& f : fs::directory_iterator(out)) left.insert(f.path().filename().string());
  for (const auto& o : c.outputs) {
    EXPECT_EQ(io::read_file(out + "/" + o), kSentinel) << o << " was modified";
    left.erase(o);
  }
  EXPECT_TRUE(left.empty()) << "left behind in the output folder: " << *left.begin();
}

std::string case_name(const ::testing::TestParamInfo<bad_case>& i) { return i.param.name; }

INSTANTIATE_TEST_SUITE_P(Files, BadInput, ::testing::ValuesIn(file_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(Parameters, BadInput, ::testing::ValuesIn(parameter_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(Numerics, BadInput, ::testing::ValuesIn(numeric_cases()), case_name);

TEST(BadInputSuite, HasAtLeastEightyCases) {
  EXPECT_GE(file_cases().size() + parameter_cases().size() + numeric_cases().size(), 80u);
}

}  // namespace
}  // namespace kf::bad
