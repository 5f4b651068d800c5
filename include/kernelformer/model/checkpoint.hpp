// kernelformer/model/checkpoint.hpp — safetensors files, the format numpy and PyTorch users
// read (safetensors.torch.load_file / safe_open).
//
// Layout: an 8-byte little-endian header length N, N bytes of JSON
//   {"<name>": {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}, ...,
//    "__metadata__": {"key": "value", ...}}
// (padded with spaces to a multiple of 8), then the raw little-endian data. Tensor names are the
// parameters' names — PyTorch state_dict names. Writing is atomic (temporary file, then rename).
// Loading validates the header, the dtypes, the shapes and that every byte range lies inside the
// file; a truncated or corrupted file is a std::runtime_error naming the file and the problem.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kernelformer/nn/parameters.hpp"

namespace kf::model {

struct checkpoint_tensor {
  std::string name;
  std::vector<index> shape;
  std::vector<float> values;
};

// The value of a metadata key; throws std::runtime_error naming a missing key.
std::string checkpoint_metadata_get(const std::map<std::string, std::string>& m,
                                    const std::string& key);

struct checkpoint {
  std::map<std::string, std::string> metadata;
  std::vector<checkpoint_tensor> tensors;
  const checkpoint_tensor* find(const std::string& name) const;
};

void checkpoint_save(const std::string& path, const nn::parameters<float>& params,
                     const std::map<std::string, std::string>& metadata);
// The file's bytes (for callers that stage several outputs together).
std::string checkpoint_encode(const nn::parameters<float>& params,
                              const std::map<std::string, std::string>& metadata);
checkpoint checkpoint_load(const std::string& path);
checkpoint checkpoint_parse(const std::string& bytes, const std::string& name);
// Copies every tensor into the parameters with the same name; throws naming missing,
// unexpected or mis-shaped tensors.
void checkpoint_apply(const checkpoint& ck, nn::parameters<float>& params);

}  // namespace kf::model
