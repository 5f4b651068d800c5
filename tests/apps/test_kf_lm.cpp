// End-to-end: kf train lm on a small text, then kf sample (deterministic per seed) and
// kf attention (grid and single head, PNG/SVG/CSV; --html for decoder-only and encoder-decoder
// checkpoints); bad inputs fail with one clear line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "apps/run_kf.hpp"
#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/model/checkpoint.hpp"
#include "kernelformer/model/lm_train.hpp"
#include "kernelformer/model/token_model.hpp"
#include "kernelformer/text/tokenizer.hpp"
#include "test_paths.hpp"

namespace kf {
namespace {

namespace fs = std::filesystem;
using test::run_kf;

TEST(KfLm, TrainSampleAttention) {
  const fs::path dir = fs::temp_directory_path() / ("kf_lm_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string d = dir.string(),
                    corpus = std::string(KF_FIXTURES_DIR).append("/memorize_1k.txt");
  auto r = run_kf("train lm --corpus " + corpus + " --iters 20 --val-fraction 0.2 --out " + d +
                  "/run --save " + d + "/lm.safetensors --summary " + d + "/s.json");
  ASSERT_EQ(r.code, 0) << r.output;
  const std::string js = io::read_file(d + "/s.json");
  for (const char* key : {"\"val_loss\"", "\"val_perplexity\"", "\"tokens_per_second\"",
                          "\"tokenizer\"", "\"vocab\"", "\"evals\""})
    EXPECT_NE(js.find(key), std::string::npos) << key;
  for (const char* f : {"loss.csv", "loss.png", "loss.svg", "eval.csv", "sample.txt"})
    EXPECT_TRUE(fs::exists(d + "/run/" + f)) << f;
  const std::string m = " --model " + d + "/lm.safetensors";
  auto s1 = run_kf("sample" + m + " --prompt \"The \" --tokens 30 --seed 4");
  auto s2 = run_kf("sample" + m + " --prompt \"The \" --tokens 30 --seed 4");
  ASSERT_EQ(s1.code, 0) << s1.output;
  EXPECT_EQ(s1.output, s2.output);
  EXPECT_EQ(s1.output.rfind("The ", 0), 0u);
  EXPECT_NE(s1.output.find("generation: kv-cache (exp_dot"), std::string::npos) << s1.output;
  // --no-cache: the reference route, the same text (the route line differs).
  auto s4 = run_kf("sample" + m + " --prompt \"The \" --tokens 30 --seed 4 --no-cache");
  ASSERT_EQ(s4.code, 0) << s4.output;
  EXPECT_NE(s4.output.find("generation: recompute"), std::string::npos) << s4.output;
  EXPECT_EQ(s4.output.substr(0, s4.output.find("generation:")),
            s1.output.substr(0, s1.output.find("generation:")));
  // Characters never seen in training: a warning, not a crash.
  auto s3 = run_kf("sample" + m + " --prompt \"Zebra \xE2\x98\x83\" --tokens 5");
  EXPECT_EQ(s3.code, 0) << s3.output;
  EXPECT_NE(s3.output.find("not in the vocabulary"), std::string::npos);
  r = run_kf("attention" + m + " --out " + d + "/cat.png --csv " + d + "/cat.csv");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("4 panels, 23 tokens"), std::string::npos) << r.output;
  r = run_kf("attention" + m + " --layer 2 --head 1 --out " + d + "/l2h1.svg");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(io::read_file(d + "/l2h1.svg").find("<svg"), std::string::npos);
  // Errors.
  r = run_kf("attention" + m + " --layer 3 --out " + d + "/x.png");
  EXPECT_EQ(r.code, test::error_exit(r.output));
  EXPECT_NE(r.output.find("--layer 3 is outside 1..2"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(d + "/x.png"));
  io::write_file_atomic(d + "/empty.txt", "");
  r = run_kf("train lm --corpus " + d + "/empty.txt --iters 2");
  EXPECT_EQ(r.code, test::error_exit(r.output));
  EXPECT_NE(r.output.find("empty"), std::string::npos) << r.output;
  io::write_file_atomic(d + "/bad.safetensors", "garbage");
  r = run_kf("sample --model " + d + "/bad.safetensors");
  EXPECT_EQ(r.code, test::error_exit(r.output));
  EXPECT_NE(r.output.find("bad.safetensors"), std::string::npos) << r.output;
  r = run_kf("sample" + m + " --temperature -1");
  EXPECT_EQ(r.code, test::error_exit(r.output));
  r = run_kf("train lm --tokenizer bpe --iters 1 --corpus " + corpus);
  EXPECT_EQ(r.code, test::error_exit(r.output));
  EXPECT_NE(r.output.find("unknown tokenizer"), std::string::npos) << r.output;
  // The kernel table: every kernel on the same budget.
  r = run_kf("experiment lm --corpus " + corpus +
             " --iters 3 --kernels exp_dot,gaussian:h=2 --out " + d + "/exp");
  ASSERT_EQ(r.code, 0) << r.output;
  const std::string table = io::read_file(d + "/exp/table.csv");
  EXPECT_NE(table.find("exp_dot,"), std::string::npos) << table;
  EXPECT_NE(table.find("gaussian:h=2,"), std::string::npos) << table;
  r = run_kf("experiment lm --corpus " + corpus + " --kernels nope --iters 1");
  EXPECT_EQ(r.code, test::error_exit(r.output));
  fs::remove_all(dir);
}

// kf sample's options: nucleus sampling and the repetition penalty are deterministic per seed;
// --stop ends the text before the stop string, which is not printed; bad values exit 2.
// --eval-iters bounds the evaluation and the start line states its cost.
TEST(KfLm, SamplingOptionsAndEvalIters) {
  const fs::path dir = fs::temp_directory_path() / ("kf_lm_s_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string d = dir.string(),
                    corpus = std::string(KF_FIXTURES_DIR).append("/memorize_1k.txt");
  auto r = run_kf("train lm --corpus " + corpus + " --iters 10 --save " + d + "/lm.safetensors");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(r.output.find("nothing was kept"), std::string::npos) << r.output;
  const auto kept =
      run_kf("train lm --corpus " + corpus + " --iters 2");  // neither --save nor --out
  ASSERT_EQ(kept.code, 0) << kept.output;
  EXPECT_NE(kept.output.find("nothing was kept: add --save"), std::string::npos) << kept.output;
  const std::string m = " --model " + d + "/lm.safetensors";
  auto t1 = run_kf("sample" + m + " --prompt \"The \" --tokens 60 --seed 4 --top-p 0.9 " +
                   "--repetition-penalty 1.3 2>/dev/null");
  auto t2 = run_kf("sample" + m + " --prompt \"The \" --tokens 60 --seed 4 --top-p 0.9 " +
                   "--repetition-penalty 1.3 2>/dev/null");
  ASSERT_EQ(t1.code, 0) << t1.output;
  EXPECT_EQ(t1.output, t2.output);
  auto greedy = run_kf("sample" + m + " --prompt \"The \" --tokens 60 --temperature 0 2>/dev/null");
  ASSERT_EQ(greedy.code, 0) << greedy.output;
  const std::string text = greedy.output.substr(4);  // after the prompt
  const auto cut = text.find(' ');
  if (cut != std::string::npos && cut > 0) {
    auto st = run_kf("sample" + m + " --prompt \"The \" --tokens 60 --temperature 0 --stop \" \"");
    ASSERT_EQ(st.code, 0) << st.output;
    EXPECT_EQ(st.output.substr(0, st.output.find('\n')), "The " + text.substr(0, cut)) << st.output;
    EXPECT_NE(st.output.find("stopped at a --stop string"), std::string::npos) << st.output;
  }
  for (const char* bad :
       {" --top-p 0", " --top-p 1.5", " --repetition-penalty 0.5", " --stop \"\""}) {
    auto b = run_kf("sample" + m + bad);
    EXPECT_EQ(b.code, 2) << bad << ": " << b.output;
  }
  // --eval-iters bounds the evaluation and the start line states its cost.
  auto ev = run_kf("train lm --corpus " + corpus + " --iters 3 --eval-iters 8");
  ASSERT_EQ(ev.code, 0) << ev.output;
  EXPECT_NE(ev.output.find("8 windows of 32 tokens each"), std::string::npos) << ev.output;
  EXPECT_EQ(run_kf("train lm --corpus " + corpus + " --iters 3 --eval-iters -1").code, 2);
  fs::remove_all(dir);
}

// --tokenizer word changes the numbers: the vocabulary, token counts and validation loss in the
// summary are those of the saved model and tokenizer evaluated here on the same split.
TEST(KfLm, WordTokenizerSummaryMatchesTheSavedModel) {
  const fs::path dir = fs::temp_directory_path() / ("kf_lm_word_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string d = dir.string(),
                    corpus = std::string(KF_FIXTURES_DIR).append("/memorize_1k.txt");
  const auto r = run_kf("train lm --tokenizer word --corpus " + corpus +
                        " --iters 6 --val-fraction 0.25 --save " + d + "/lm.safetensors " +
                        "--summary " + d + "/s.json --quiet");
  ASSERT_EQ(r.code, 0) << r.output;
  const auto js = nlohmann::json::parse(io::read_file(d + "/s.json"));
  const std::string text = io::read_file(corpus);
  const auto cut = static_cast<std::size_t>(double(text.size()) * (1.0 - 0.25));
  const std::string train_text = text.substr(0, cut), val_text = text.substr(cut);
  const auto ck = model::checkpoint_load(d + "/lm.safetensors");
  const auto tok = text::tokenizer::from_metadata(ck.metadata);
  ASSERT_EQ(tok.kind(), text::tokenizer_kind::word);
  // The saved vocabulary is the one the training text gives (min count 2), words not characters.
  const auto fresh = text::tokenizer::train(text::tokenizer_kind::word, train_text);
  ASSERT_EQ(tok.size(), fresh.size());
  for (index i = 0; i < tok.size(); ++i) EXPECT_EQ(tok.piece(i), fresh.piece(i));
  EXPECT_EQ(js["vocab"].get<index>(), tok.size());
  index unknown = 0;
  const auto train = tok.encode(train_text);
  const auto val = tok.encode(val_text, &unknown);
  EXPECT_LT(train.size(), train_text.size() / 3) << "word pieces, not bytes";
  EXPECT_EQ(js["train_tokens"].get<std::size_t>(), train.size());
  EXPECT_EQ(js["val_tokens"].get<std::size_t>(), val.size());
  EXPECT_EQ(js["val_unknown_tokens"].get<index>(), unknown);
  EXPECT_GT(unknown, 0);
  // The validation loss is the saved model's mean cross-entropy on the validation stream.
  auto m = model::token_model_load(ck);
  const double val_loss = model::lm_evaluate(*m, val, model::lm_preset_get("tiny").eval_windows);
  EXPECT_NEAR(js["val_loss"].get<double>(), val_loss, 1e-6 * val_loss);
  EXPECT_NEAR(js["val_perplexity"].get<double>(), std::exp(val_loss), 1e-6 * std::exp(val_loss));
  // Six iterations from a uniform start: the loss is still near log(vocab).
  EXPECT_NEAR(val_loss, std::log(double(tok.size())), 1.0);
  fs::remove_all(dir);
}

// --vocab N keeps the N - 1 most frequent word pieces (and <unk>): the saved tokenizer is the one
// the library builds with that limit; a limit below 2 is refused before any work.
TEST(KfLm, VocabLimitsTheWordTokenizer) {
  const fs::path dir = fs::temp_directory_path() / ("kf_lm_vocab_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string d = dir.string(),
                    corpus = std::string(KF_FIXTURES_DIR).append("/memorize_1k.txt");
  auto r = run_kf("train lm --tokenizer word --vocab 20 --corpus " + corpus +
                  " --iters 2 --val-fraction 0.25 --save " + d + "/lm.safetensors --quiet");
  ASSERT_EQ(r.code, 0) << r.output;
  const auto tok =
      text::tokenizer::from_metadata(model::checkpoint_load(d + "/lm.safetensors").metadata);
  const std::string text = io::read_file(corpus);
  const auto cut = static_cast<std::size_t>(double(text.size()) * (1.0 - 0.25));
  const auto fresh = text::tokenizer::train(text::tokenizer_kind::word, text.substr(0, cut), 2, 20);
  ASSERT_EQ(tok.size(), 20);
  for (index i = 0; i < tok.size(); ++i) EXPECT_EQ(tok.piece(i), fresh.piece(i));
  r = run_kf("train lm --tokenizer word --vocab 1 --iters 2 --corpus " + corpus + " --save " + d +
             "/bad.safetensors");
  EXPECT_EQ(r.code, test::error_exit(r.output)) << r.output;
  EXPECT_NE(r.output.find("--vocab 1: expected 2 to 1,000,000"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(d + "/bad.safetensors"));
  fs::remove_all(dir);
}

// An untrained checkpoint with a character tokenizer (ENCODER_LAYERS > 0: encoder-decoder whose
// encoder reads SRC_VOCAB pieces; 0: the tokenizer's).
std::string write_token_model(const std::string& path, index encoder_layers, index src_vocab = 0) {
  const auto tok =
      text::tokenizer::train(text::tokenizer_kind::character,
                             "the cat sat on the mat. </script> <b> & </script> the cat <b> &");
  model::token_model_config c;
  c.vocab = tok.size();
  c.src_vocab = src_vocab;
  c.context = 24;
  c.encoder_layers = encoder_layers;
  c.decoder_layers = 2;
  c.block = {16, 2, 32, 0.0, nn::activation::gelu, true, kernel_exp_dot{}};
  c.tie_weights = encoder_layers == 0;
  model::token_model<float> m(c, 1);
  auto md = c.to_metadata();
  tok.to_metadata(md);
  io::write_file_atomic(path, model::checkpoint_encode(m.params(), md));
  return " --model " + path;
}

TEST(KfLm, AttentionHtml) {
  const fs::path dir = fs::temp_directory_path() / ("kf_lm_html_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string d = dir.string();
  const std::string lm = write_token_model(d + "/lm.safetensors", 0);
  auto r = run_kf("attention" + lm + " --text \"the cat </script>\" --html " + d + "/v.html");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("1 attention site × 2 layers × 2 heads, 17 tokens"), std::string::npos)
      << r.output;
  const std::string page = io::read_file(d + "/v.html");
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  std::size_t scripts = 0;  // the data's and the code's: a token did not end one early
  for (auto p = page.find("</script>"); p != std::string::npos; p = page.find("</script>", p + 1))
    ++scripts;
  EXPECT_EQ(scripts, 2u);
  // Heatmaps and the page in one run.
  r = run_kf("attention" + lm + " --out " + d + "/h.png --html " + d + "/both.html");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(fs::exists(d + "/h.png") && fs::exists(d + "/both.html"));
  // Outputs are checked before the model is read; nothing is left behind on an error.
  for (const auto& [args, msg] : std::vector<std::pair<std::string, std::string>>{
           {" --html " + d + "/v.htm", "--html"},
           {" --html " + d + "/no/such/dir/v.html", "--html"},
           {"", "--out (heatmap.png or heatmap.svg) or --html (view.html) is required"},
           {" --source x --html " + d + "/s.html", "--source is for encoder-decoder models"}}) {
    r = run_kf("attention" + lm + args);
    EXPECT_EQ(r.code, test::error_exit(r.output)) << args;
    EXPECT_NE(r.output.find(msg), std::string::npos) << args << ": " << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  }
  EXPECT_FALSE(fs::exists(d + "/s.html"));
  r = run_kf("attention --model " + d + "/missing.safetensors --html " + d + "/m.html");
  EXPECT_EQ(r.code, test::error_exit(r.output));
  EXPECT_FALSE(fs::exists(d + "/m.html"));

  // Encoder-decoder: three sites with --source; refused without it, with --out, or when the
  // encoder's vocabulary is not the tokenizer's.
  const std::string ed = write_token_model(d + "/ed.safetensors", 1);
  r = run_kf("attention" + ed + " --text \"the mat\" --source \"the cat sat\" --html " + d +
             "/ed.html");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("3 attention sites"), std::string::npos) << r.output;
  const std::string edp = io::read_file(d + "/ed.html");
  for (const char* id : {"encoder_self", "decoder_self", "decoder_cross"})
    EXPECT_NE(edp.find(id), std::string::npos) << id;
  r = run_kf("attention" + ed + " --html " + d + "/ed2.html");
  EXPECT_EQ(r.code, test::error_exit(r.output));
  EXPECT_NE(r.output.find("--source is required"), std::string::npos) << r.output;
  r = run_kf("attention" + ed + " --source x --out " + d + "/ed.png");
  EXPECT_EQ(r.code, test::error_exit(r.output));
  EXPECT_NE(r.output.find("use --html alone"), std::string::npos) << r.output;
  const std::string ed9 = write_token_model(d + "/ed9.safetensors", 1, 9);
  r = run_kf("attention" + ed9 + " --source x --html " + d + "/ed9.html");
  EXPECT_EQ(r.code, test::error_exit(r.output));
  EXPECT_NE(r.output.find("the encoder's vocabulary (9) is not the tokenizer's"), std::string::npos)
      << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  EXPECT_FALSE(fs::exists(d + "/ed2.html") || fs::exists(d + "/ed.png") ||
               fs::exists(d + "/ed9.html"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kf
