// One read of the sources per compile (Compiler::compile, read_compile_sources): the bytes hashed are the bytes
// NVRTC compiles, so a folder rewritten during a compile never leaves one text's cubin cached under another text's
// hash. The header here is a FIFO that hands out one text on its first open and another on every later one: a
// compile that reads it twice (hash, then NVRTC through -I) gets both. No GPU needed.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "gpu/compiler.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

void write(const fs::path& p, const std::string& text) {
  std::ofstream f(p);
  f << text;
}

const char* kSource = R"(
#include "value.cuh"
extern "C" __device__ int attn_launch_info[4] = {128, 0, 128, 0};
extern "C" __global__ void value_kernel(int* out) { out[threadIdx.x] = VALUE * int(threadIdx.x); }
)";
const std::string kFirst = "#define VALUE 1234567\n", kLater = "#define VALUE 7654321\n";

/// A FIFO at `path` that gives kFirst to its first reader and kLater to every later one, until destroyed.
class TwoFacedHeader {
 public:
  explicit TwoFacedHeader(const std::string& path) : path_(path) {
    EXPECT_EQ(::mkfifo(path.c_str(), 0644), 0) << std::strerror(errno);
    writer_ = std::thread([this] {
      while (!done_) {
        const int fd = ::open(path_.c_str(), O_WRONLY | O_NONBLOCK);  // ENXIO until a reader opens it
        if (fd < 0) {
          std::this_thread::sleep_for(1ms);
          continue;
        }
        ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
        const std::string& text = opens_++ == 0 ? kFirst : kLater;
        EXPECT_EQ(::write(fd, text.data(), text.size()), ssize_t(text.size()));
        ::close(fd);
        std::this_thread::sleep_for(200ms);  // the reader has read to the end before the next open is served
      }
    });
  }
  ~TwoFacedHeader() {
    done_ = true;
    writer_.join();
  }
  int opens() const { return opens_; }

 private:
  std::string path_;
  std::atomic<bool> done_{false};
  std::atomic<int> opens_{0};
  std::thread writer_;
};

/// The compile of `header_text` from a plain folder, without a cache: what the cubin of that text is.
CompiledVariant clean_build(const std::string& header_text, const CompilerOptions& base) {
  const std::string dir = test::temp_dir("attn-clean");
  write(dir + "/value.cu", kSource);
  write(dir + "/value.cuh", header_text);
  CompilerOptions o = base;
  o.use_cache = false;
  return Compiler(o).compile({dir + "/value.cu", "value_kernel", {}, {}});
}

void check_one_read(const CompilerOptions& base) {
  const std::string dir = test::temp_dir("attn-fifo"), cache = test::temp_dir("attn-cache");
  write(dir + "/value.cu", kSource);
  CompilerOptions o = base;
  o.cache_dir = cache;
  CompiledVariant v;
  int opens = 0;
  {
    TwoFacedHeader header(dir + "/value.cuh");
    v = Compiler(o).compile({dir + "/value.cu", "value_kernel", {}, {}});
    opens = header.opens();
  }
  ASSERT_TRUE(v.ok) << v.log;
  EXPECT_EQ(opens, 1) << "the header was read more than once";
  const CompiledVariant first = clean_build(kFirst, base), later = clean_build(kLater, base);
  ASSERT_TRUE(first.ok && later.ok) << first.log << later.log;
  ASSERT_NE(first.cubin_hash, later.cubin_hash);
  EXPECT_EQ(v.hash, first.hash);  // the text read first is the one hashed ...
  EXPECT_EQ(v.cubin_hash, first.cubin_hash) << "the cubin of the other text was cached under this text's hash";
  // ... and the one whose cubin the cache holds under that hash.
  std::ifstream cached(cache + "/" + v.hash + ".cubin", std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(cached)), std::istreambuf_iterator<char>());
  EXPECT_EQ(cubin_hash(bytes), first.cubin_hash);
}

TEST(CompileSources, AHeaderRewrittenDuringTheCompileNeverPutsItsOtherTextUnderTheHash) { check_one_read({}); }

TEST(CompileSources, TheSameHoldsWithNvrtcInACompileWorker) {
  CompilerOptions o;
  o.procs.procs = 1;
  o.procs.exe = ATTN_BINARY;
  check_one_read(o);
}

// The same with a plain file replaced (write and rename, as an editor or a sync does) every millisecond during
// eight compiles, each into a fresh cache: whichever text a compile read, its cache entry holds that text's cubin.
// A compile that reads the header twice mixes them about every other time.
TEST(CompileSources, AHeaderReplacedInALoopNeverMixesTwoTextsInOneEntry) {
  const std::string dir = test::temp_dir("attn-swap");
  write(dir + "/value.cu", kSource);
  write(dir + "/value.cuh", kFirst);
  const CompiledVariant first = clean_build(kFirst, {}), later = clean_build(kLater, {});
  ASSERT_TRUE(first.ok && later.ok) << first.log << later.log;
  std::atomic<bool> done{false};
  std::thread swapper([&] {
    for (int i = 0; !done; ++i) {
      write(dir + "/value.cuh.tmp", i % 2 ? kLater : kFirst);
      fs::rename(dir + "/value.cuh.tmp", dir + "/value.cuh");
      std::this_thread::sleep_for(1ms);
    }
  });
  int mixed = 0, seen_first = 0, seen_later = 0;
  for (int k = 0; k < 8; ++k) {
    CompilerOptions o;
    o.cache_dir = test::temp_dir("attn-cache");
    const CompiledVariant v = Compiler(o).compile({dir + "/value.cu", "value_kernel", {}, {}});
    if (!v.ok) continue;  // the moment of a rename: a missing file, transient, never cached
    std::ifstream cached(o.cache_dir + "/" + v.hash + ".cubin", std::ios::binary);
    const std::vector<char> bytes((std::istreambuf_iterator<char>(cached)), std::istreambuf_iterator<char>());
    const CompiledVariant& want = v.hash == first.hash ? first : later;
    EXPECT_TRUE(v.hash == first.hash || v.hash == later.hash);
    mixed += v.cubin_hash != want.cubin_hash || cubin_hash(bytes) != want.cubin_hash;
    (v.hash == first.hash ? seen_first : seen_later)++;
  }
  done = true;
  swapper.join();
  EXPECT_EQ(mixed, 0) << "compiles whose cache entry holds the other text's cubin";
  EXPECT_GT(seen_first + seen_later, 4);
}

TEST(CompileSources, ReadsTheSourceAndItsIncludesOnceAsNvrtcSeesThem) {
  const std::string dir = test::temp_dir("attn-src");
  fs::create_directories(dir + "/blocks");
  write(dir + "/t.cu", "#include \"blocks/a.cuh\"\n#include \"top.cuh\"\n");
  write(dir + "/blocks/a.cuh", "#include \"blocks/b.cuh\"\n#include \"top.cuh\"\n#include \"missing.cuh\"\n");
  write(dir + "/blocks/b.cuh", "// b\n");
  write(dir + "/top.cuh", "// top\n");
  const CompileSources s = read_compile_sources(dir + "/t.cu");
  EXPECT_EQ(s.source, "#include \"blocks/a.cuh\"\n#include \"top.cuh\"\n");
  const std::vector<std::pair<std::string, std::string>> want{
      {"blocks/a.cuh", "#include \"blocks/b.cuh\"\n#include \"top.cuh\"\n#include \"missing.cuh\"\n"},
      {"blocks/b.cuh", "// b\n"},
      {"top.cuh", "// top\n"}};
  EXPECT_EQ(s.headers, want);  // each file once, sorted by name; a missing one skipped
  EXPECT_EQ(local_includes(dir + "/t.cu"), want);
  EXPECT_THROW(read_compile_sources(dir + "/nope.cu"), std::invalid_argument);
  const Compiler c{CompilerOptions{test::temp_dir("attn-cache")}};
  EXPECT_EQ(c.content_hash({dir + "/t.cu", "k", {}, {}}), c.content_hash({dir + "/t.cu", "k", {}, {}}, s));
}

}  // namespace
}  // namespace attn
