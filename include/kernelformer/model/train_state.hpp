// kernelformer/model/train_state.hpp — what a training run needs to continue exactly where a
// checkpoint left it: the optimizer's moments and step count, the random generators' states,
// the data order, the progress (epochs or iterations done) and the history so far (losses,
// seconds, evaluations), plus the run's options so a resume can refuse a different run.
//
// Stored inside the safetensors checkpoint beside the weights, so the file stays one that
// safetensors/PyTorch read: F64 and I64 tensors named kf_train.* (exp_avg, exp_avg_sq, order,
// losses, seconds, evals) and string metadata kf_train.* (done, adam_steps, rng, dropout_rng,
// run.<option>). A std::mt19937_64 state is its standard text form (operator<<).
#pragma once

#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "kernelformer/model/checkpoint.hpp"
#include "kernelformer/optim/adamw.hpp"

namespace kf::model {

struct train_state {
  index done = 0;  // epochs (periodic) or iterations (language model) completed
  index adam_steps = 0;
  std::vector<double> exp_avg, exp_avg_sq;
  std::string rng, dropout_rng;  // std::mt19937_64 states
  std::vector<index> order;      // periodic: the sample order after the last shuffle
  std::vector<double> losses;    // per epoch (periodic) or per iteration (language model)
  std::vector<double> seconds;   // per epoch (periodic)
  std::vector<double> evals;     // language model: rows (iter, train_loss, val_loss, seconds)
  std::map<std::string, std::string> run;  // the run's options, compared by a resume
};

// The state as metadata entries and extra tensors of a checkpoint (checkpoint_encode's extra).
void train_state_encode(const train_state& s, std::map<std::string, std::string>& metadata,
                        std::vector<checkpoint_tensor>& tensors);
// The state of a checkpoint, or nullopt when it holds none (a final model). Throws
// std::runtime_error naming the field when it is malformed or does not fit `parameters`
// values.
std::optional<train_state> train_state_decode(const checkpoint& ck, index parameters);

// A generator's state as text and back; the parse throws std::runtime_error naming `what`.
std::string rng_save(const std::mt19937_64& g);
void rng_load(std::mt19937_64& g, const std::string& text, const std::string& what);

// The part of a state every training run keeps alike: the optimizer's moments and step count and
// the two generators (the run's own: batches, shuffles; and dropout's). The restore throws
// naming a malformed generator state; adamw::restore checks the moments' sizes.
void train_state_store(train_state& s, const optim::adamw<float>& opt, const std::mt19937_64& rng,
                       const std::mt19937_64& dropout_rng);
void train_state_restore(const train_state& s, optim::adamw<float>& opt, std::mt19937_64& rng,
                         std::mt19937_64& dropout_rng);

// Throws std::runtime_error naming the first option whose value differs between the saved run
// and this one ("the checkpoint was trained with --batch 64, this run has 32").
void train_state_check_run(const train_state& s, const std::map<std::string, std::string>& run);

}  // namespace kf::model
