// @brief Byte layout of the native trace format, version 1 (spelled out in traces/FORMAT.md).
#pragma once

#include <cstdint>

#include "traces/trace_limits.h"

namespace hisparse::traces {

inline constexpr char kNativeMagic[8] = {'H', 'S', 'T', 'R', 'A', 'C', 'E', '\x1a'};
inline constexpr uint32_t kNativeVersion = 1;
inline constexpr uint32_t kFileHeaderBytes = 48;  // magic, version, header size, layers, top_k, flags, 0s, crc
inline constexpr uint32_t kChunkHeaderBytes = 40;
inline constexpr uint32_t kFooterBytes = 16;      // u64 offset of the index chunk, 8-byte end magic
inline constexpr char kChunkMagic[4] = {'H', 'S', 'C', 'K'};
inline constexpr char kEndMagic[8] = {'H', 'S', 'T', 'R', 'E', 'N', 'D', '\x1a'};

// File header flags.
inline constexpr uint32_t kFlagInitialEmpty = 1u << 0;   // initial state: empty (else identity)
inline constexpr uint32_t kFlagTopkInt64 = 1u << 1;      // the .npy it came from held int64 positions
inline constexpr uint32_t kFlagSeqLensInt64 = 1u << 2;   // ... and int64 seq_lens
inline constexpr uint32_t kKnownFlags = kFlagInitialEmpty | kFlagTopkInt64 | kFlagSeqLensInt64;

// Chunk kinds and codecs.
inline constexpr uint8_t kChunkSteps = 1;
inline constexpr uint8_t kChunkIndex = 2;
inline constexpr uint8_t kCodecNone = 0;
inline constexpr uint8_t kCodecZstd = 1;

// Per (step, layer) record tag bits.
inline constexpr uint64_t kTagPermuted = 1u << 0;     // the list is not in ascending order: ranks follow
inline constexpr uint64_t kTagPaddingMixed = 1u << 1;  // some -1 sit before a valid entry: their indices follow

inline constexpr uint32_t kMaxChunkRaw = 1u << 28;  // 256 MB decoded; the writer splits long requests well below

}  // namespace hisparse::traces
