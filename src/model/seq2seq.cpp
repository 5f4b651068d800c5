// Sequence-to-sequence training, evaluation, greedy decoding and cross-attention alignment
// (model/seq2seq.hpp). The data side is seq2seq_data.cpp. Shapes: B pairs, S source and T target
// positions (each batch's longest), V vocabulary; token ids (B·S) and (B·T) row-major.
#include "kernelformer/model/seq2seq.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>

#include "kernelformer/model/lm_train.hpp"
#include "kernelformer/optim/adamw.hpp"

namespace kf::model {
namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The index of the largest of n values (the first on ties): greedy decoding's choice.
template <class T>
index argmax(const T* row, index n) {
  return static_cast<index>(std::max_element(row, row + n) - row);
}

}  // namespace

// Pre-LN GELU blocks without dropout; throws std::invalid_argument for a name other than tiny
// or small. seq2seq_configure later sets the vocabulary and context from the data.
seq2seq_preset seq2seq_preset_get(const std::string& name) {
  seq2seq_preset p;
  p.name = name;
  auto& m = p.model;
  m.block.norm_first = true;
  m.block.act = nn::activation::gelu;
  m.block.dropout = 0.0;
  m.learned_positions = false;  // sinusoidal (see the header)
  m.embedding_std = 0.2;        // commensurate with the sinusoidal table (token_model.hpp)
  m.tie_weights = true;  // the decoder's embedding and the output layer; the encoder has its own
  if (name == "tiny") {
    m.encoder_layers = m.decoder_layers = 2;
    m.block.d_model = 64;
    m.block.heads = 2;
    m.block.d_ff = 256;
    p.batch = 64;
    p.steps = 1000;
    p.warmup = 100;
    p.eval_every = 200;
    p.lr = 2e-3;
    p.min_lr = 2e-4;
  } else if (name == "small") {
    m.encoder_layers = m.decoder_layers = 3;
    m.block.d_model = 128;
    m.block.heads = 4;
    m.block.d_ff = 512;
    p.batch = 64;
    p.steps = 3000;
    p.warmup = 200;
    p.eval_every = 500;
    p.lr = 1e-3;
    p.min_lr = 1e-4;
  } else {
    throw std::invalid_argument(
        fmt::format("unknown configuration '{}': expected tiny or small", name.substr(0, 40)));
  }
  return p;
}

// The context covers the longest source and the longest target plus its BOS/EOS marker.
void seq2seq_configure(seq2seq_preset& p, const seq2seq_vocab& v,
                       std::span<const seq2seq_pair> pairs) {
  index longest = 1;
  for (const auto& q : pairs)
    longest = std::max(
        {longest, static_cast<index>(q.source.size()), static_cast<index>(q.target.size()) + 1});
  p.model.vocab = v.size();
  p.model.src_vocab = 0;  // shared: the tokenizer's
  p.model.context = longest;
}

// The batch as the model's input: tokens and src are views of this batch's vectors, so the
// batch must outlive the forward that reads them.
token_input seq2seq_batch::input() const {
  token_input in;
  in.batch = batch;
  in.t = t;
  in.tokens = dec_in;
  in.s = s;
  in.src = src;
  in.src_lengths = src_lengths;
  return in;
}

// The pairs ids into one padded batch: src (B·S) padded with EOS beyond src_lengths, dec_in and
// dec_out (B·T) with EOS and −1 (ignored by the loss). Throws naming a pair that does not fit.
seq2seq_batch seq2seq_make_batch(const seq2seq_vocab& v, std::span<const seq2seq_pair> pairs,
                                 std::span<const index> ids, index context) {
  seq2seq_batch b;
  b.batch = static_cast<index>(ids.size());
  std::vector<std::vector<index>> src, tgt;
  for (index id : ids) {
    const seq2seq_pair& p = pairs[static_cast<std::size_t>(id)];
    src.push_back(v.encode(p.source));
    tgt.push_back(v.encode(p.target));
    if (src.back().empty() || static_cast<index>(src.back().size()) > context ||
        static_cast<index>(tgt.back().size()) + 1 > context)
      throw std::invalid_argument(fmt::format(
          "a pair of {} and {} characters does not fit the model (sources 1..{}, targets 0..{})",
          p.source.size(), p.target.size(), context, context - 1));
    b.s = std::max(b.s, static_cast<index>(src.back().size()));
    b.t = std::max(b.t, static_cast<index>(tgt.back().size()) + 1);
  }
  b.src.assign(static_cast<std::size_t>(b.batch * b.s), v.eos);
  b.dec_in.assign(static_cast<std::size_t>(b.batch * b.t), v.eos);
  b.dec_out.assign(b.dec_in.size(), -1);
  for (index r = 0; r < b.batch; ++r) {
    const auto& x = src[static_cast<std::size_t>(r)];
    const auto& y = tgt[static_cast<std::size_t>(r)];
    std::copy(x.begin(), x.end(), b.src.begin() + r * b.s);
    b.src_lengths.push_back(static_cast<index>(x.size()));
    // dec_in = BOS y_0 … y_{n−1}; dec_out = y_0 … y_{n−1} EOS
    const auto row = static_cast<std::size_t>(r * b.t);
    b.dec_in[row] = v.bos;
    std::copy(y.begin(), y.end(), b.dec_in.begin() + static_cast<std::ptrdiff_t>(row) + 1);
    std::copy(y.begin(), y.end(), b.dec_out.begin() + static_cast<std::ptrdiff_t>(row));
    b.dec_out[row + y.size()] = v.eos;
  }
  return b;
}

// Every source is checked before the first forward. A row ends at its EOS (not emitted) or after
// `context` tokens; rows already finished still ride along in the batch until all are done.
std::vector<std::vector<index>> seq2seq_greedy(token_model<float>& m, const seq2seq_vocab& v,
                                               const std::vector<std::vector<index>>& sources,
                                               index batch,
                                               const std::function<void(index, index)>& progress) {
  const index context = m.config().context, V = m.config().vocab, n = index(sources.size());
  if (!m.is_encoder_decoder())
    throw std::invalid_argument("seq2seq decoding needs an encoder-decoder model");
  for (const auto& s : sources)
    if (s.empty() || static_cast<index>(s.size()) > context)
      throw std::invalid_argument(fmt::format(
          "a source of {} tokens: the model reads 1..{} (its context)", s.size(), context));
  std::vector<std::vector<index>> out(sources.size());
  batch = std::max<index>(1, batch);
  for (index b0 = 0; b0 < n; b0 += batch) {
    const index B = std::min(batch, n - b0);  // sources b0 .. b0 + B − 1
    index S = 0;                              // their longest: src is (B·S)
    for (index r = 0; r < B; ++r) S = std::max(S, index(sources[std::size_t(b0 + r)].size()));
    token_input in;
    std::vector<index> src(static_cast<std::size_t>(B * S), v.eos), dec;
    for (index r = 0; r < B; ++r) {
      const auto& s = sources[std::size_t(b0 + r)];
      std::copy(s.begin(), s.end(), src.begin() + r * S);
      in.src_lengths.push_back(static_cast<index>(s.size()));
    }
    std::vector<char> done(static_cast<std::size_t>(B), 0);
    index open = B;
    // Step t: the decoder reads BOS plus the t − 1 tokens chosen so far (rows of t tokens; a
    // finished row is padded with EOS, which the causal mask keeps out of nothing it needs).
    for (index t = 1; t <= context && open > 0; ++t) {
      dec.assign(static_cast<std::size_t>(B * t), v.eos);
      for (index r = 0; r < B; ++r) {
        const auto& o = out[std::size_t(b0 + r)];
        dec[std::size_t(r * t)] = v.bos;
        for (index j = 0; j < index(o.size()) && j + 1 < t; ++j)
          dec[std::size_t(r * t + j + 1)] = o[std::size_t(j)];
      }
      in.batch = B, in.t = t, in.tokens = dec, in.s = S, in.src = src;
      m.forward(in, {}, nullptr);  // logits (B·t, V); row r·t + t − 1: the next token
      for (index r = 0; r < B; ++r) {
        if (done[std::size_t(r)]) continue;
        const index next = argmax(m.logits().data() + (r * t + t - 1) * V, V);
        if (next == v.eos || t == context) {
          done[std::size_t(r)] = 1, --open;
          if (next == v.eos) continue;
        }
        out[std::size_t(b0 + r)].push_back(next);
      }
    }
    if (progress) progress(b0 + B, n);
  }
  return out;
}

std::vector<std::string> seq2seq_translate(token_model<float>& m, const seq2seq_vocab& v,
                                           std::span<const std::string> sources, index batch,
                                           const std::function<void(index, index)>& progress) {
  std::vector<std::vector<index>> ids;
  for (const auto& s : sources) ids.push_back(v.encode(s));
  const auto out = seq2seq_greedy(m, v, ids, batch, progress);
  std::vector<std::string> r;
  for (const auto& o : out) r.push_back(v.decode(o));
  return r;
}

// Teacher-forced loss and token accuracy over every target position (EOS included), then exact
// match of greedy decodes; NaN for no pairs.
seq2seq_eval seq2seq_evaluate(token_model<float>& m, const seq2seq_vocab& v,
                              std::span<const seq2seq_pair> pairs,
                              std::vector<std::string>* predictions) {
  seq2seq_eval e;
  const index n = static_cast<index>(pairs.size()), V = m.config().vocab, per_batch = 64;
  if (n == 0) {
    e.val_loss = e.token_accuracy = e.exact_match = NAN;
    return e;
  }
  double loss = 0;  // summed over target positions, divided by their count at the end
  index tokens = 0, right = 0;
  std::vector<index> ids;
  for (index b0 = 0; b0 < n; b0 += per_batch) {
    ids.resize(static_cast<std::size_t>(std::min(per_batch, n - b0)));
    std::iota(ids.begin(), ids.end(), b0);
    const seq2seq_batch b = seq2seq_make_batch(v, pairs, ids, m.config().context);
    index valid = 0;  // target positions that count (not padding)
    for (index y : b.dec_out) valid += y >= 0;
    loss += m.forward(b.input(), b.dec_out, nullptr) * double(valid);  // mean → sum over tokens
    tokens += valid;
    for (std::size_t r = 0; r < b.dec_out.size(); ++r)
      if (b.dec_out[r] >= 0) right += argmax(m.logits().data() + index(r) * V, V) == b.dec_out[r];
  }
  e.val_loss = loss / double(tokens);
  e.token_accuracy = double(right) / double(tokens);
  std::vector<std::vector<index>> sources;
  for (const auto& p : pairs) sources.push_back(v.encode(p.source));
  const auto out = seq2seq_greedy(m, v, sources, per_batch);
  index exact = 0;
  if (predictions) predictions->clear();
  for (index i = 0; i < n; ++i) {
    std::string y = v.decode(out[std::size_t(i)]);
    exact += y == pairs[std::size_t(i)].target;
    if (predictions) predictions->push_back(std::move(y));
  }
  e.exact_match = double(exact) / double(n);
  return e;
}

// p.steps steps of B pairs drawn epoch by epoch from a shuffled order, evaluated (on at most
// p.eval_pairs of each split) every p.eval_every steps and at the end.
seq2seq_train_result seq2seq_train(token_model<float>& m, const seq2seq_vocab& v,
                                   std::span<const seq2seq_pair> train,
                                   std::span<const seq2seq_pair> val, const seq2seq_preset& p,
                                   std::uint64_t seed, const seq2seq_progress& progress) {
  const index n = static_cast<index>(train.size());
  if (n == 0) throw std::invalid_argument("seq2seq training needs at least one pair");
  if (p.steps < 1 || p.batch < 1) throw std::invalid_argument("steps and batch must be >= 1");
  auto& params = m.params();
  optim::adamw<float> opt = lm_optimizer(params, p.lr, p.weight_decay);
  // Warmup capped at a fifth of the run, so a short run still decays.
  const optim::lr_schedule sched{p.lr, p.min_lr, std::min(p.warmup, p.steps / 5), p.steps};
  std::mt19937_64 rng(seed);  // one generator for the epoch shuffles and for dropout
  std::vector<index> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  const index B = std::min(p.batch, n);
  index next = n;  // position in the epoch's order; n: shuffle first
  const auto eval_val = val.first(std::min<std::size_t>(val.size(), std::size_t(p.eval_pairs)));
  const auto eval_train =
      train.first(std::min<std::size_t>(train.size(), std::size_t(p.eval_pairs)));
  seq2seq_train_result r;
  const double t0 = now_seconds();
  double train_seconds = 0;
  for (index step = 0; step < p.steps; ++step) {
    const double s0 = now_seconds();
    if (next + B > n) {  // a new epoch: a fresh order (the tail of the old one is skipped)
      std::shuffle(order.begin(), order.end(), rng);
      next = 0;
    }
    const seq2seq_batch b = seq2seq_make_batch(
        v, train, std::span<const index>(order).subspan(std::size_t(next), std::size_t(B)),
        m.config().context);
    next += B;
    params.zero_grad();  // forward → backward → clip → step, as lm_train
    const double loss = m.forward(b.input(), b.dec_out, &rng);
    if (!std::isfinite(loss))
      throw std::runtime_error(
          fmt::format("training diverged at step {}: the loss is {} (try a lower learning rate)",
                      step + 1, loss));
    m.backward();
    if (p.clip > 0) optim::clip_grad_norm<float>(params.grads(), p.clip);
    opt.step(params.values(), params.grads(), sched.at(step));
    train_seconds += now_seconds() - s0;
    r.losses.push_back(loss);
    const seq2seq_eval* evp = nullptr;
    if ((p.eval_every > 0 && (step + 1) % p.eval_every == 0) || step + 1 == p.steps) {
      seq2seq_eval e = seq2seq_evaluate(m, v, eval_val);
      e.step = step + 1;
      e.train_loss = seq2seq_evaluate(m, v, eval_train).val_loss;
      e.seconds = now_seconds() - t0;
      r.evals.push_back(e);
      evp = &r.evals.back();
    }
    if (progress) progress(step + 1, p.steps, loss, evp);
  }
  r.seconds = now_seconds() - t0;
  r.pairs_per_second = train_seconds > 0 ? double(p.steps * B) / train_seconds : 0.0;
  return r;
}

// The cross-attention weights (T, S) of one head while the decoder reads the pair teacher-forced.
matrix<float> seq2seq_cross_attention(token_model<float>& m, const seq2seq_vocab& v,
                                      const seq2seq_pair& pair, index layer, index head) {
  const index id = 0;
  const seq2seq_batch b =
      seq2seq_make_batch(v, std::span(&pair, 1), std::span(&id, 1), m.config().context);
  m.forward(b.input(), {}, nullptr);
  return m.attention_weights(attention_site::decoder_cross, layer, head, 0);
}

// Per head: the mean cross-attention mass, over every target character with a known source span,
// that falls on that span; chance is the span's share of the source. In batches of 64 pairs.
seq2seq_alignment seq2seq_cross_alignment(token_model<float>& m, const seq2seq_vocab& v,
                                          const seq2seq_task& task,
                                          std::span<const seq2seq_pair> pairs) {
  const index L = m.config().decoder_layers, H = m.config().block.heads, n = index(pairs.size());
  seq2seq_alignment a;
  a.per_head.assign(static_cast<std::size_t>(L * H), 0.0);
  std::vector<index> ids;
  for (index b0 = 0; b0 < n; b0 += 64) {
    ids.resize(static_cast<std::size_t>(std::min<index>(64, n - b0)));
    std::iota(ids.begin(), ids.end(), b0);
    const seq2seq_batch b = seq2seq_make_batch(v, pairs, ids, m.config().context);
    m.forward(b.input(), {}, nullptr);
    for (index l = 0; l < L; ++l)
      for (index h = 0; h < H; ++h)
        for (index r = 0; r < b.batch; ++r) {
          const seq2seq_pair& p = pairs[std::size_t(b0 + r)];
          const matrix<float> w = m.attention_weights(attention_site::decoder_cross, l, h, r);
          for (index i = 0; i < index(p.target.size()); ++i) {
            const auto [lo, hi] = seq2seq_task_source_span(task, p, i);
            if (lo < 0) continue;
            double on = 0;
            for (index j = lo; j < hi; ++j) on += double(w(i, j));
            a.per_head[std::size_t(l * H + h)] += on;
            if (l == 0 && h == 0) {  // per character, not per head: counted on one head only
              a.chance += double(hi - lo) / double(p.source.size());
              ++a.characters;
            }
          }
        }
  }
  if (a.characters == 0) {
    a.best = a.chance = NAN;
    return a;
  }
  for (double& x : a.per_head) x /= double(a.characters);
  a.chance /= double(a.characters);
  // Flat index l·H + h of the best head (the first on ties).
  const auto best = std::max_element(a.per_head.begin(), a.per_head.end()) - a.per_head.begin();
  a.best_layer = index(best) / H;
  a.best_head = index(best) % H;
  a.best = a.per_head[std::size_t(best)];
  return a;
}

}  // namespace kf::model
