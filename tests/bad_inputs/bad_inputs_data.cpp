// Inputs of the bad-input suite (inputs.hpp): written once per test process.
#include <stdexcept>
#include <string>

#include "inputs.hpp"
#include "test_paths.hpp"

namespace kf::bad {

namespace {

void npy_files(const std::string& in) {
  put(in + "/q.npy", io::npy_encode<double>(grid_matrix(5, 2).cview()));
  put(in + "/k.npy", io::npy_encode<double>(grid_matrix(6, 2).cview()));
  put(in + "/v.npy", io::npy_encode<double>(grid_matrix(6, 1).cview()));
  put(in + "/q3.npy", io::npy_encode<double>(grid_matrix(5, 3).cview()));
  put(in + "/v7.npy", io::npy_encode<double>(grid_matrix(7, 1).cview()));
  matrix<double> nan = grid_matrix(5, 2), inf = grid_matrix(5, 2);
  nan(2, 1) = std::numeric_limits<double>::quiet_NaN();
  inf(3, 0) = -std::numeric_limits<double>::infinity();
  put(in + "/nan.npy", io::npy_encode<double>(nan.cview()));
  put(in + "/inf.npy", io::npy_encode<double>(inf.cview()));
  put(in + "/i8.npy",
      npy_header("{'descr': '<i8', 'fortran_order': False, 'shape': (5, 2), }") + doubles(10));
  put(in + "/magic.npy", "PK\x03\x04 this is a zip file, not an array" + std::string(100, 'x'));
  put(in + "/trunc.npy",
      npy_header("{'descr': '<f8', 'fortran_order': False, 'shape': (100, 2), }") + doubles(10));
  put(in + "/wrap.npy",
      npy_header("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967297), }") +
          doubles(4));
  put(in + "/3d.npy",
      npy_header("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2, 2), }") + doubles(8));
  put(in + "/neg.npy",
      npy_header("{'descr': '<f8', 'fortran_order': False, 'shape': (-5, 2), }") + doubles(10));
  put(in + "/empty.npy", "");
  put(in + "/garbage.npy", npy_header("this is not a dictionary at all") + doubles(4));
  std::string hl = npy_header("{'descr': '<f8', 'fortran_order': False, 'shape': (5, 2), }");
  hl[8] = '\xff';
  hl[9] = '\x7f';  // header length 32767: beyond the file
  put(in + "/hdrlen.npy", hl + doubles(10));
  fs::create_directories(in + "/dir.npy");
  // Extreme magnitudes: a tiny bandwidth on ordinary data is computed (not here); inputs whose
  // ratio to the bandwidth exceeds float64 cannot be.
  put(in + "/huge.npy", io::npy_encode<double>(grid_matrix(5, 1, 1e305).cview()));
  put(in + "/v5.npy", io::npy_encode<double>(grid_matrix(5, 1).cview()));
  put(in + "/grid.npy", io::npy_encode<double>(grid_matrix(5, 1, 1.05).cview()));
  for (const auto& [f, rows] :
       {std::pair<const char*, index>{"q_f4", 5}, {"k_f4", 6}, {"v_f4", 6}}) {
    const auto m = grid_matrix(rows, std::string(f) == "v_f4" ? 1 : 2);
    matrix<float> mf(m.rows(), m.cols());
    for (index i = 0; i < m.size(); ++i) mf.data()[i] = static_cast<float>(m.data()[i]);
    put(in + "/" + f + ".npy", io::npy_encode<float>(mf.cview()));
  }
}

void csv_files(const std::string& in) {
  std::string data = "x,y\n";
  for (int i = 0; i < 30; ++i) data += std::to_string(0.1 * i) + "," + std::to_string(i % 7) + "\n";
  put(in + "/data.csv", data);
  put(in + "/text.csv", "x,y\n1,2\n2,3\n3,4\n4,oops\n5,6\n");
  put(in + "/blank.csv", "x,y\n1,2\n2,\n3,4\n");
  put(in + "/ragged.csv", "x,y\n1,2\n2,3,4\n3,4\n");
  put(in + "/dup.csv", "x,x\n1,2\n2,3\n");
  put(in + "/empty.csv", "");
  put(in + "/header_only.csv", "x,y\n");
  put(in + "/nan.csv", "x,y\n1,2\n2,nan\n3,4\n");
  put(in + "/inf.csv", "x,y\n1,2\n-inf,3\n3,4\n");
  put(in + "/one.csv", "x,y\n1,2\n");
  put(in + "/const.csv", "x,y\n1,2\n1,3\n1,4\n1,5\n");
  std::string huge = "x,y\n", tiny = "x,y\n", bigy = "x,y\n";
  for (int i = 0; i < 20; ++i) {
    huge += std::to_string(i) + "e299," + std::to_string(i % 3) + "\n";
    tiny += std::to_string(i + 1) + "e-300," + std::to_string(i % 3) + "\n";
    bigy += std::to_string(i) + "," + std::to_string(i % 3 + 1) + "e300\n";
  }
  put(in + "/huge.csv", huge);
  put(in + "/tiny.csv", tiny);
  put(in + "/bigy.csv", bigy);
  std::string corpus;
  for (int i = 0; i < 100; ++i) corpus += "the cat sat on the mat. ";
  put(in + "/corpus.txt", corpus);
  put(in + "/nul.txt", std::string("text\0with a NUL", 15));
  put(in + "/short.txt", "ab");
  std::string pairs;
  for (int i = 0; i < 12; ++i)
    pairs += "ab" + std::to_string(i) + "\t" + std::to_string(i) + "ba\n";
  put(in + "/nul.tsv", std::string("ab\tba\nc\0d\tdc\n", 13) + pairs);
  put(in + "/binary.csv", std::string("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16));
  put(in + "/quote.csv", "a,b\nc,d\n\"e,f\n");
  put(in + "/long.tsv", std::string(300, 'x') + "\ty\n" + pairs);
  put(in + "/few.tsv", "a\tb\nc\td\n");
}

void run_ok(const std::string& args) {
  const auto r = run_kf_raw(args);
  if (!WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0)
    throw std::runtime_error("kf " + args + " failed:\n" + r.output);
}

void model_files(const std::string& in) {
  const std::string sin = in + "/sin.safetensors", lm = in + "/lm.safetensors";
  run_ok("train periodic --config quick --epochs 1 --dropout 0 --save " + sin + " --quiet");
  run_ok("train periodic --config quick --epochs 2 --save " + in +
         "/state.safetensors --save-every 1 --quiet");
  run_ok("train lm --corpus " + in + "/corpus.txt --iters 2 --save " + lm + " --quiet");
  run_ok("train seq2seq --task dates --examples 40 --validation 10 --steps 1 --save " + in +
         "/s2s.safetensors --quiet");
  set_meta(sin, in + "/neg_dmodel.safetensors", "d_model", "-64");
  set_meta(sin, in + "/big_dmodel.safetensors", "d_model", "4096");
  set_meta(sin, in + "/heads3.safetensors", "heads", "3");
  set_meta(sin, in + "/bad_kernel.safetensors", "kernel", "bogus:h=1");
  set_meta(sin, in + "/tanh.safetensors", "activation", "tanh");
  set_meta(sin, in + "/seq_text.safetensors", "seq_len", "99abc");
  set_meta(sin, in + "/as_lm.safetensors", "kind", "token_model");
  set_meta(lm, in + "/lm_context0.safetensors", "context", "0");
  set_meta(lm, in + "/lm_vocab.safetensors", "vocab", "7");
  set_meta(lm, in + "/lm_pieces.safetensors", "tokenizer_pieces", "[[1, 2], \"x\"]");
  set_meta(lm, in + "/lm_tokenizer.safetensors", "tokenizer", "bpe");
  edit_safetensors(sin, in + "/no_seq_len.safetensors",
                   [](auto& h, std::string&) { h["__metadata__"].erase("seq_len"); });
  edit_safetensors(sin, in + "/meta_number.safetensors",
                   [](auto& h, std::string&) { h["__metadata__"]["layers"] = 1; });
  edit_safetensors(sin, in + "/overlap.safetensors", [](auto& h, std::string&) {
    h["head.bias"]["data_offsets"] = h["embed.bias"]["data_offsets"];
  });
  edit_safetensors(sin, in + "/f16.safetensors",
                   [](auto& h, std::string&) { h["head.bias"]["dtype"] = "F16"; });
  edit_safetensors(sin, in + "/huge_shape.safetensors", [](auto& h, std::string&) {
    h["head.bias"]["shape"] = {4294967296ull, 4294967296ull};
  });
  edit_safetensors(sin, in + "/nan_weight.safetensors", [](auto& h, std::string& d) {
    const auto at = h["head.bias"]["data_offsets"][0].template get<std::size_t>();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::memcpy(d.data() + at, &nan, 4);
  });
  edit_safetensors(sin, in + "/extra.safetensors", [](auto& h, std::string& d) {
    h["surprise.weight"] = {
        {"dtype", "F32"}, {"shape", {1}}, {"data_offsets", {d.size(), d.size() + 4}}};
    d.append(4, '\0');
  });
  edit_safetensors(sin, in + "/gap.safetensors", [](auto&, std::string& d) { d.append(8, '\0'); });
  const std::string s = io::read_file(sin);
  put(in + "/trunc.safetensors", s.substr(0, s.size() / 2));
  put(in + "/text.safetensors", "this is a text file, not a checkpoint at all\n");
  std::string big = s;
  big[5] = '\x7f';  // header length ~ 2^47
  put(in + "/hdr.safetensors", big);
  std::string bad_json = s;
  bad_json[8] = '#';  // the header's opening brace
  put(in + "/bad_json.safetensors", bad_json);
  put(in + "/x5.npy", io::npy_encode<double>(grid_matrix(3, 5).cview()));
  put(in + "/x99.npy", io::npy_encode<double>(grid_matrix(3, 99).cview()));
}

}  // namespace

void make_inputs(const std::string& in) {
  fs::remove_all(in);
  fs::create_directories(in);
  npy_files(in);
  csv_files(in);
  model_files(in);
  put(in + "/.complete", "");
}

std::string inputs_dir() {
  const std::string in = KF_BAD_INPUTS_DIR;
  // ctest makes them once (the bad_inputs_make fixture); a direct run makes them itself.
  if (!fs::exists(in + "/.complete")) make_inputs(in);
  return in;
}

}  // namespace kf::bad
