// A small thread-safe least-recently-used cache of shared, immutable values by string key: the
// explorer's trained heads, LOO bandwidths and head fits (serve_api.cpp).
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

namespace kf::cli {

template <class V>
class lru_cache {
 public:
  explicit lru_cache(std::size_t capacity) : capacity_(capacity) {}
  std::shared_ptr<const V> get(const std::string& key) {
    std::lock_guard lock(mutex_);
    const auto it = map_.find(key);
    if (it == map_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second.second);
    return it->second.first;
  }
  void put(const std::string& key, std::shared_ptr<const V> v) {
    std::lock_guard lock(mutex_);
    if (const auto it = map_.find(key); it != map_.end()) {
      order_.erase(it->second.second);
      map_.erase(it);
    }
    order_.push_front(key);
    map_.emplace(key, std::make_pair(std::move(v), order_.begin()));
    if (map_.size() > capacity_) {
      map_.erase(order_.back());
      order_.pop_back();
    }
  }

 private:
  std::size_t capacity_;
  std::mutex mutex_;
  std::list<std::string> order_;  // most recent first
  std::unordered_map<std::string,
                     std::pair<std::shared_ptr<const V>, std::list<std::string>::iterator>>
      map_;
};

}  // namespace kf::cli
