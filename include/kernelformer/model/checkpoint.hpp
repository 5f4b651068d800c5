// kernelformer/model/checkpoint.hpp — safetensors files, the format numpy and PyTorch users
// read (safetensors.torch.load_file / safe_open).
//
// Layout: an 8-byte little-endian header length N, N bytes of JSON
//   {"<name>": {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}, ...,
//    "__metadata__": {"key": "value", ...}}
// (padded with spaces to a multiple of 8), then the raw little-endian data. Tensor names are the
// parameters' names — PyTorch state_dict names. Writing is atomic (temporary file, then rename).
//
// Loading checks everything before it trusts anything: the header length against the file, the
// JSON, every dtype (F32, F64, I64), every shape and byte range with overflow-safe arithmetic
// against the bytes actually present, that the tensors neither overlap nor leave gaps (as the
// safetensors library requires), that metadata values are strings, and that weights are finite.
// Every failure is one std::runtime_error line naming the file and the tensor or field (names
// and values quoted at most ~80 characters).
//
// Tensors whose names start with "kf_train." are a training run's state (optimizer moments, data
// order, loss history: model/train_state.hpp); checkpoint_apply leaves them alone, and PyTorch
// loads them as extra entries of the state dict (load_state_dict(..., strict=False)).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "kernelformer/nn/parameters.hpp"

namespace kf::model {

inline constexpr const char* kTrainStatePrefix = "kf_train.";

enum class checkpoint_dtype { f32, f64, i64 };

struct checkpoint_tensor {
  std::string name;
  std::vector<index> shape;
  checkpoint_dtype dtype = checkpoint_dtype::f32;
  std::vector<float> values;             // F32
  std::vector<double> values_f64;        // F64
  std::vector<std::int64_t> values_i64;  // I64
};

// The value of a metadata key; throws std::runtime_error naming a missing key.
std::string checkpoint_metadata_get(const std::map<std::string, std::string>& m,
                                    const std::string& key);
// An integer metadata value in [lo, hi]; throws naming the key, its (bounded) text and the range.
index checkpoint_metadata_index(const std::map<std::string, std::string>& m, const std::string& key,
                                index lo, index hi);
// A finite number in [lo, hi) (hi_open) or [lo, hi].
double checkpoint_metadata_double(const std::map<std::string, std::string>& m,
                                  const std::string& key, double lo, double hi,
                                  bool hi_open = false);
// "true" or "false".
bool checkpoint_metadata_bool(const std::map<std::string, std::string>& m, const std::string& key);

struct checkpoint {
  std::map<std::string, std::string> metadata;
  std::vector<checkpoint_tensor> tensors;
  const checkpoint_tensor* find(const std::string& name) const;
};

void checkpoint_save(const std::string& path, const nn::parameters<float>& params,
                     const std::map<std::string, std::string>& metadata);
// The file's bytes (for callers that stage several outputs together); `extra` tensors (F64 or
// I64 training state) follow the parameters.
std::string checkpoint_encode(const nn::parameters<float>& params,
                              const std::map<std::string, std::string>& metadata,
                              const std::vector<checkpoint_tensor>& extra = {});
checkpoint checkpoint_load(const std::string& path);
checkpoint checkpoint_parse(std::string_view bytes, const std::string& name);
// Compares the tensor table with the parameters a model registered (names and shapes only: the
// model may be a shapes-only instance whose buffers were never allocated). Throws naming the
// first missing, unexpected or mis-shaped tensor; `config` (e.g. "d_model 64, heads 2") is added
// to a mismatch so the metadata field at fault can be found.
void checkpoint_check_shapes(const checkpoint& ck, const nn::parameters<float>& params,
                             const std::string& config);
// Copies every tensor into the parameters with the same name; throws naming missing,
// unexpected or mis-shaped tensors. Training-state tensors (kTrainStatePrefix) are skipped.
void checkpoint_apply(const checkpoint& ck, nn::parameters<float>& params);

// At most ~80 characters of TEXT on one line (control bytes as '?'), for messages.
std::string checkpoint_quote(const std::string& text);

}  // namespace kf::model
