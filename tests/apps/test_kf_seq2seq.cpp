// End-to-end with the real kf binary: kf train seq2seq (a few steps) → kf predict (its output is
// the library's greedy decoding of the saved checkpoint) → kf inspect (encoder self, decoder
// self and cross-attention heads) → kf attention --html (three sites); and bad inputs: one line,
// exit 1, nothing written. The model learning to reverse is tests/model/test_seq2seq.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "apps/run_kf.hpp"
#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/io/csv.hpp"
#include "kernelformer/model/checkpoint.hpp"
#include "kernelformer/model/seq2seq.hpp"

namespace kf {
namespace {

namespace fs = std::filesystem;
using test::run_kf;

std::size_t lines(const std::string& s) {
  return std::size_t(std::count(s.begin(), s.end(), '\n'));
}

// The checkpoint's greedy outputs for SOURCES, through the library.
std::vector<std::string> library_decode(const std::string& path,
                                        const std::vector<std::string>& sources) {
  const model::checkpoint ck = model::checkpoint_load(path);
  auto m = model::token_model_load(ck);
  const auto v = model::seq2seq_vocab::from_tokenizer(text::tokenizer::from_metadata(ck.metadata));
  return model::seq2seq_translate(*m, v, sources);
}

class KfSeq2seq : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kf_seq2seq_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    d_ = dir_.string();
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  std::string d_;
};

TEST_F(KfSeq2seq, TrainPredictInspectAttention) {
  const std::string model = d_ + "/rev.safetensors";
  auto r = run_kf(
      "train seq2seq --task reverse --max-length 5 --examples 400 --validation 40 "
      "--steps 30 --batch 16 --seed 2 --save " +
      model + " --out " + d_ + "/run");
  ASSERT_EQ(r.code, 0) << r.output;
  for (const char* s : {"reverse (lengths 3..5)", "400 train / 40 validation pairs", "exact match",
                        "cross-attention: layer"})
    EXPECT_NE(r.output.find(s), std::string::npos) << s << "\n" << r.output;
  for (const char* f :
       {"loss.csv", "loss.png", "loss.svg", "eval.csv", "accuracy.png", "cross_attention.png",
        "cross_attention.csv", "predictions.tsv", "summary.json"})
    EXPECT_TRUE(fs::exists(d_ + "/run/" + f)) << f;
  const auto js = nlohmann::json::parse(io::read_file(d_ + "/run/summary.json"));
  EXPECT_EQ(js["steps"], 30);
  EXPECT_EQ(js["val_pairs"], 40);
  EXPECT_EQ(js["context"], 6);  // strings of up to 5, targets + </s>
  for (const char* k : {"val_exact_match", "val_token_accuracy"})
    EXPECT_TRUE(js[k].get<double>() >= 0 && js[k].get<double>() <= 1) << k;
  const auto& a = js["cross_alignment"];
  ASSERT_TRUE(a.is_object());
  EXPECT_EQ(a["per_head"].size(), 4u);  // 2 decoder layers x 2 heads
  EXPECT_TRUE(a["best"].get<double>() > 0 && a["best"].get<double>() <= 1);
  // predictions.tsv: a header and one line per validation pair.
  EXPECT_EQ(lines(io::read_file(d_ + "/run/predictions.tsv")), 41u);
  // cross_attention.csv: 2 layers x 2 heads x (target + 1) x source weights of the first pair.
  const std::string src0 = js["example"]["source"];
  EXPECT_EQ(lines(io::read_file(d_ + "/run/cross_attention.csv")),
            1 + 4 * (src0.size() + 1) * src0.size());

  // kf predict: --text prints, --input writes; both equal the library's greedy decoding.
  const std::vector<std::string> sources = {"ab3", "xyz9", src0};
  const auto want = library_decode(model, sources);
  r = run_kf("predict --model " + model + " --text ab3");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(r.output, want[0] + "\n");
  EXPECT_EQ(js["example"]["predicted"], want[2]);
  io::write_file_atomic(d_ + "/src.txt", "ab3\r\nxyz9\n" + src0 + "\n");
  r = run_kf("predict --model " + model + " --input " + d_ + "/src.txt --out " + d_ + "/o.tsv");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(io::read_file(d_ + "/o.tsv"), "source\toutput\nab3\t" + want[0] + "\nxyz9\t" + want[1] +
                                              "\n" + src0 + "\t" + want[2] + "\n");

  // kf inspect: every site, layer and head; the cross heads are (decoder positions) x (source).
  r = run_kf("inspect " + model + " --source ab3 --text 3ba --csv " + d_ + "/heads.csv");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("decoder_cross"), std::string::npos) << r.output;
  io::csv_options opt;
  opt.text_columns = {"site", "shape"};
  const auto heads = io::csv_read(d_ + "/heads.csv", opt);
  ASSERT_EQ(heads.rows(), 12);       // 3 sites x 2 layers x 2 heads
  const auto& site = heads.text[0];  // text_columns[0]
  const auto& q = heads.columns[heads.column("queries")];
  const auto& k = heads.columns[heads.column("keys")];
  for (index i = 0; i < 12; ++i) {
    const std::string want_site = i < 4 ? "encoder_self" : i < 8 ? "decoder_self" : "decoder_cross";
    EXPECT_EQ(site[std::size_t(i)], want_site) << i;
    EXPECT_EQ(q[std::size_t(i)], i < 4 ? 3.0 : 4.0) << i;  // decoder: <s> 3 b a
    EXPECT_EQ(k[std::size_t(i)], i < 4 || i >= 8 ? 3.0 : 4.0) << i;
  }
  // Defaults: the kept validation example and the model's own output.
  r = run_kf("inspect " + model + " --quiet --csv " + d_ + "/h2.csv");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(io::csv_read(d_ + "/h2.csv", opt).rows(), 12);

  // kf attention --html: three sites, --source by default the kept example.
  r = run_kf("attention --model " + model + " --html " + d_ + "/a.html");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("3 attention sites"), std::string::npos) << r.output;
  const std::string page = io::read_file(d_ + "/a.html");
  for (const char* id : {"encoder_self", "decoder_self", "decoder_cross", "row-scale"})
    EXPECT_NE(page.find(id), std::string::npos) << id;
  r = run_kf("attention --model " + model + " --source " + std::string(40, 'a') + " --html " + d_ +
             "/long.html");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("keeping the first 6"), std::string::npos) << r.output;
}

TEST_F(KfSeq2seq, PairsFromAFile) {
  // A CSV with a header, CR LF line ends and quoted fields; every 10th pair is validation.
  std::string csv = "source,target\r\n";
  for (int i = 0; i < 30; ++i)
    csv += "\"a, " + std::to_string(i) + "\",\"" + std::to_string(i) + " \"\"x\"\"\"\r\n";
  io::write_file_atomic(d_ + "/p.csv", csv);
  const std::string model = d_ + "/p.safetensors";
  auto r = run_kf("train seq2seq --pairs " + d_ + "/p.csv --epochs 2 --batch 9 --save " + model +
                  " --summary " + d_ + "/s.json");
  ASSERT_EQ(r.code, 0) << r.output;
  const auto js = nlohmann::json::parse(io::read_file(d_ + "/s.json"));
  EXPECT_EQ(js["data"], d_ + "/p.csv");
  EXPECT_EQ(js["train_pairs"], 27);
  EXPECT_EQ(js["val_pairs"], 3);
  EXPECT_EQ(js["steps"], 6);                   // 2 epochs of 27 pairs, 9 a step
  EXPECT_EQ(js["example"]["source"], "a, 9");  // the 10th pair
  EXPECT_EQ(js["example"]["target"], "9 \"x\"");
  EXPECT_EQ(js["context"], 7);  // the longest target, "10 \"x\"", + </s>
  EXPECT_TRUE(js["cross_alignment"].is_null());
  r = run_kf("predict --model " + model + " --text \"a, 3\"");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(r.output, library_decode(model, {"a, 3"})[0] + "\n");
}

TEST_F(KfSeq2seq, BadInputsOneLineNothingWritten) {
  io::write_file_atomic(d_ + "/bad.tsv", "ab\tba\nabc\tc\tb\n");
  io::write_file_atomic(d_ + "/few.csv", "source,target\nab,ba\ncd,dc\n");
  io::write_file_atomic(d_ + "/x.txt", "ab\tba\n");
  const std::string out = " --save " + d_ + "/m.safetensors --out " + d_ + "/run";
  const std::pair<std::string, std::string> train_cases[] = {
      {"--task sort", "--task: unknown task 'sort': expected reverse or dates"},
      {"--pairs " + d_ + "/bad.tsv", "bad.tsv:2: 3 fields; expected two"},
      {"--pairs " + d_ + "/few.csv", "few.csv: 2 pairs; at least 10"},
      {"--pairs " + d_ + "/x.txt", "expected a .tsv"},
      {"--pairs " + d_ + "/missing.tsv", "missing.tsv"},
      {"--config huge", "--config: unknown configuration 'huge'"},
      {"--steps 5 --epochs 2", "not both"},
      {"--max-length 2", "--max-length"},
      {"--summary " + d_ + "/no/such/s.json", "--summary"},
  };
  for (const auto& [args, expect] : train_cases) {
    const auto r = run_kf("train seq2seq " + args + out);
    EXPECT_EQ(r.code, test::error_exit(r.output)) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(expect), std::string::npos) << args << "\n" << r.output;
    EXPECT_EQ(lines(r.output), 1u) << r.output;
    EXPECT_FALSE(fs::exists(d_ + "/m.safetensors") || fs::exists(d_ + "/run")) << args;
  }
  // A model to predict with (no training needed for the errors).
  const std::string model = d_ + "/s.safetensors";
  auto r = run_kf(
      "train seq2seq --task dates --examples 40 --validation 10 --steps 1 --quiet "
      "--save " +
      model);
  ASSERT_EQ(r.code, 0) << r.output;
  io::write_file_atomic(d_ + "/gap.txt", "2024-01-01\n\n2024-01-02\n");
  const std::pair<std::string, std::string> predict_cases[] = {
      {"", "give --text"},
      {" --text 2024-01-01 --input " + d_ + "/gap.txt", "give --text"},
      {" --text " + std::string(30, '1'), "--text has 30 characters; the model reads at most"},
      {" --input " + d_ + "/gap.txt", "gap.txt:2: an empty line"},
      {" --input " + d_ + "/none.txt", "none.txt"},
      {" --text 2024-01-01 --out " + d_ + "/o.npy", "--out"},
  };
  for (const auto& [args, expect] : predict_cases) {
    r = run_kf("predict --model " + model + args);
    EXPECT_EQ(r.code, test::error_exit(r.output)) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(expect), std::string::npos) << args << "\n" << r.output;
    EXPECT_EQ(lines(r.output), 1u) << r.output;
    EXPECT_FALSE(fs::exists(d_ + "/o.npy"));
  }
  r = run_kf("inspect " + model + " --data " + d_ + "/x.txt");
  EXPECT_EQ(r.code, test::error_exit(r.output));
  EXPECT_NE(r.output.find("--data is a language model's text"), std::string::npos) << r.output;
  r = run_kf("attention --model " + model + " --out " + d_ + "/h.png");
  EXPECT_EQ(r.code, test::error_exit(r.output));
  EXPECT_NE(r.output.find("use --html alone"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(d_ + "/h.png"));
}

}  // namespace
}  // namespace kf
