#pragma once
// The paged KV cache of vLLM v1: a pool of fixed-size blocks, a free queue in eviction order
// (least recently freed first), and with prefix caching a map from the hash of a full block's
// content to the block that holds it. Freed blocks keep their content until they are reused, so a
// later request with the same prefix (or a preempted request recomputing itself) finds them.
//
// Block content is identified without tokens: block i of a request is "shared prefix p, block i"
// while it lies entirely inside the request's shared prefix (prefix_id p, prefix_tokens), and
// "request r, block i" otherwise.
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace perfloom::sim {

struct BlockOwner {
  int64_t request = 0;        // unique per request
  int64_t prefix_id = -1;     // -1: no shared prefix
  int64_t prefix_tokens = 0;  // tokens shared by every request with this prefix_id
};

class BlockPool {
 public:
  BlockPool(int64_t num_blocks, int64_t block_size, bool prefix_caching);

  int64_t num_blocks() const { return static_cast<int64_t>(blocks_.size()); }
  int64_t block_size() const { return block_size_; }
  int64_t free_blocks() const { return free_count_; }  // unreferenced, cached content or not
  int64_t used_blocks() const { return num_blocks() - free_count_; }
  bool prefix_caching() const { return prefix_caching_; }

  // Leading full blocks of a request's first `tokens` tokens that are in the cache. At most
  // (tokens - 1) / block_size: the last token is always recomputed to produce logits (vLLM).
  int64_t cached_prefix_blocks(const BlockOwner& owner, int64_t tokens) const;

  // Makes `blocks` cover `tokens_after` tokens. When `blocks` is empty, its first `hit_blocks` come
  // from the cache (cached_prefix_blocks). Fails, changing nothing, when not enough blocks are free.
  bool allocate(std::vector<int32_t>& blocks, const BlockOwner& owner, int64_t hit_blocks, int64_t tokens_after);

  // Publishes the blocks that `tokens` computed tokens fill completely, so later requests find them.
  void cache_full_blocks(const std::vector<int32_t>& blocks, const BlockOwner& owner, int64_t tokens);

  // Releases a request's blocks, last block first (it is evicted first), and clears the list.
  void free(std::vector<int32_t>& blocks);

 private:
  struct Block {
    int32_t ref = 0;
    int32_t prev = -1, next = -1;  // free queue links
    bool in_free = false;
    uint64_t hash = 0;  // 0: no cached content
  };
  uint64_t hash_of(const BlockOwner& owner, int64_t index) const;
  void push_free_tail(int32_t b);
  void remove_free(int32_t b);
  int32_t pop_free_head();

  int64_t block_size_;
  bool prefix_caching_;
  std::vector<Block> blocks_;
  int32_t head_ = -1, tail_ = -1;
  int64_t free_count_ = 0;
  std::unordered_map<uint64_t, int32_t> cached_;
};

}  // namespace perfloom::sim
