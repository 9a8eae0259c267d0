// parallel_for (core/on_cores.h): every iteration once, on any number of threads; the exception
// of the smallest failing iteration, and no new iterations after one fails.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "core/on_cores.h"

using namespace tessel;

TEST_SUITE("parallel_for") {
  TEST_CASE("every iteration runs once on any number of threads") {
    constexpr int64_t kCount = 10000;
    for (int workers : {1, 2, 3, 0}) {
      auto runs = std::make_unique<std::atomic<int>[]>(kCount);
      parallel_for(
          kCount, [&](int64_t i) { ++runs[i]; }, workers);
      int64_t wrong = 0;
      for (int64_t i = 0; i < kCount; ++i) wrong += runs[i] != 1;
      INFO(workers);
      CHECK(wrong == 0);
    }
  }

  // Iterations 7 and 8 both throw, 7 only after 20 ms, so that on two threads 8 has thrown
  // first: the rethrown exception is 7's all the same.
  TEST_CASE("the exception of the smallest failing iteration is the one rethrown") {
    for (int rep = 0; rep < 5; ++rep) {
      std::string what;
      try {
        parallel_for(
            1000,
            [](int64_t i) {
              if (i == 7) std::this_thread::sleep_for(std::chrono::milliseconds(20));
              if (i == 7 || i == 8) throw std::runtime_error(std::to_string(i));
            },
            2);
      } catch (const std::runtime_error& e) {
        what = e.what();
      }
      CHECK(what == "7");
    }
  }

  // Iteration 0 throws: the threads start no new iteration after it, so of a million at most the
  // few already handed out run.
  TEST_CASE("no iteration starts after one has failed") {
    // Iteration 0 throws at once; every other one takes 100 us, so the second thread has run a
    // few of them by the time the first has thrown (a first throw costs microseconds, more on a
    // loaded machine). Without the stop all 10,000 would run (one second on two threads); with
    // it the count stays under 1,000 unless the throw takes 100 ms. (Iterations of no work here
    // made the count depend on the throw's speed: thousands ran under load.)
    std::atomic<int64_t> ran{0};
    CHECK_THROWS_AS(parallel_for(
                        10000,
                        [&](int64_t i) {
                          ++ran;
                          if (i == 0) throw std::runtime_error("first");
                          std::this_thread::sleep_for(std::chrono::microseconds(100));
                        },
                        2),
                    std::runtime_error);
    CHECK(ran < 1000);
  }
}
