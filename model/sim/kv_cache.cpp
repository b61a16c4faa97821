#include "model/sim/kv_cache.h"

#include <stdexcept>

namespace perfloom::sim {

BlockPool::BlockPool(int64_t num_blocks, int64_t block_size, bool prefix_caching)
    : block_size_(block_size), prefix_caching_(prefix_caching) {
  if (num_blocks <= 0 || num_blocks > (int64_t{1} << 30))
    throw std::invalid_argument("KV-cache block count out of range");
  if (block_size <= 0) throw std::invalid_argument("KV-cache block size must be positive");
  blocks_.resize(static_cast<std::size_t>(num_blocks));
  for (int32_t b = 0; b < static_cast<int32_t>(num_blocks); ++b) push_free_tail(b);
  if (prefix_caching_) cached_.reserve(static_cast<std::size_t>(num_blocks));
}

uint64_t BlockPool::hash_of(const BlockOwner& o, int64_t index) const {
  // Exact identity, not a digest: a tag bit, the owner (39 bits), the block index (24 bits).
  const bool shared = o.prefix_id >= 0 && (index + 1) * block_size_ <= o.prefix_tokens;
  const uint64_t owner = static_cast<uint64_t>(shared ? o.prefix_id : o.request) & ((uint64_t{1} << 39) - 1);
  return (shared ? uint64_t{1} << 63 : 0) | (owner << 24) | (static_cast<uint64_t>(index) & 0xFFFFFF) |
         (uint64_t{1} << 62);
}

void BlockPool::push_free_tail(int32_t b) {
  Block& k = blocks_[static_cast<std::size_t>(b)];
  k.prev = tail_;
  k.next = -1;
  if (tail_ >= 0)
    blocks_[static_cast<std::size_t>(tail_)].next = b;
  else
    head_ = b;
  tail_ = b;
  k.in_free = true;
  ++free_count_;
}

void BlockPool::remove_free(int32_t b) {
  Block& k = blocks_[static_cast<std::size_t>(b)];
  if (k.prev >= 0)
    blocks_[static_cast<std::size_t>(k.prev)].next = k.next;
  else
    head_ = k.next;
  if (k.next >= 0)
    blocks_[static_cast<std::size_t>(k.next)].prev = k.prev;
  else
    tail_ = k.prev;
  k.prev = k.next = -1;
  k.in_free = false;
  --free_count_;
}

int32_t BlockPool::pop_free_head() {
  const int32_t b = head_;
  remove_free(b);
  Block& k = blocks_[static_cast<std::size_t>(b)];
  if (k.hash != 0) {  // evict its content
    auto it = cached_.find(k.hash);
    if (it != cached_.end() && it->second == b) cached_.erase(it);
    k.hash = 0;
  }
  return b;
}

int64_t BlockPool::cached_prefix_blocks(const BlockOwner& owner, int64_t tokens) const {
  if (!prefix_caching_ || tokens <= 1) return 0;
  const int64_t max_blocks = (tokens - 1) / block_size_;
  int64_t n = 0;
  while (n < max_blocks && cached_.count(hash_of(owner, n))) ++n;
  return n;
}

bool BlockPool::allocate(std::vector<int32_t>& blocks, const BlockOwner& owner, int64_t hit_blocks,
                         int64_t tokens_after) {
  if (!blocks.empty()) hit_blocks = 0;
  const int64_t need = (tokens_after + block_size_ - 1) / block_size_;
  const int64_t fresh = need - static_cast<int64_t>(blocks.size()) - hit_blocks;
  // Cached blocks that nobody references sit in the free queue: taking them uses free capacity.
  int64_t hits_in_free = 0;
  for (int64_t i = 0; i < hit_blocks; ++i)
    if (blocks_[static_cast<std::size_t>(cached_.at(hash_of(owner, i)))].in_free) ++hits_in_free;
  if (std::max<int64_t>(fresh, 0) > free_count_ - hits_in_free) return false;
  for (int64_t i = 0; i < hit_blocks; ++i) {
    const int32_t b = cached_.at(hash_of(owner, i));
    Block& k = blocks_[static_cast<std::size_t>(b)];
    if (k.in_free) remove_free(b);
    ++k.ref;
    blocks.push_back(b);
  }
  for (int64_t i = 0; i < fresh; ++i) {
    const int32_t b = pop_free_head();
    blocks_[static_cast<std::size_t>(b)].ref = 1;
    blocks.push_back(b);
  }
  return true;
}

void BlockPool::cache_full_blocks(const std::vector<int32_t>& blocks, const BlockOwner& owner, int64_t tokens) {
  if (!prefix_caching_) return;
  const int64_t full = std::min<int64_t>(tokens / block_size_, static_cast<int64_t>(blocks.size()));
  for (int64_t i = full - 1; i >= 0; --i) {
    Block& k = blocks_[static_cast<std::size_t>(blocks[static_cast<std::size_t>(i)])];
    if (k.hash != 0) break;  // this one and those before it are published already
    k.hash = hash_of(owner, i);
    cached_.emplace(k.hash, blocks[static_cast<std::size_t>(i)]);  // keeps an existing copy
  }
}

void BlockPool::free(std::vector<int32_t>& blocks) {
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
    Block& k = blocks_[static_cast<std::size_t>(*it)];
    if (--k.ref == 0) push_free_tail(*it);
  }
  blocks.clear();
}

}  // namespace perfloom::sim
