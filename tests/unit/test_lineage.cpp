// base/lineage.h: whether the parent runs Sentinel, and the marks a child's dump leaves for its parent.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "base/lineage.h"

TEST_CASE("lineage: a child's dump leaves a mark its parent reads once", "[lineage]") {
  REQUIRE_FALSE(sentinel::children_marked_dumps());  // none before
  for (bool marks : {true, false}) {
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) _exit(marks ? (sentinel::mark_dump_for_parent() ? 0 : 1) : 0);
    int st = 0;
    REQUIRE(waitpid(pid, &st, 0) == pid);
    REQUIRE(WIFEXITED(st));
    CHECK(WEXITSTATUS(st) == 0);
    CHECK(sentinel::children_marked_dumps() == marks);
    CHECK_FALSE(sentinel::children_marked_dumps());  // read and removed
  }
}

TEST_CASE("lineage: this test's parent does not run Sentinel", "[lineage]") {
  // The unit tests link the core, not libsentinel.so: the object holding this function is the test
  // binary, which the parent (a shell or meson) does not map.
  static int here;
  CHECK_FALSE(sentinel::parent_maps_object_of(&here));
}
