/* gcoll_info: prints the library's version, build options, every GCOLL_* setting
 * with its current value (from this environment) and help, and the algorithm table
 * (default size ranges, GCOLL_TUNE rules or why they are ignored). Needs no MPI job.
 * --cleanup: removes the /dev/shm segments of killed jobs (gcoll_cleanup_segments).
 * --markdown: the settings table as Markdown (the README's, checked in CI). */
#include <gcoll/gcoll.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
    printf("usage: gcoll_info [--markdown | --cleanup [--dry-run]]\n"
           "Prints gcoll's version, build options, settings and algorithms.\n"
           "--cleanup: removes the shared-memory segments in /dev/shm that jobs killed during a\n"
           "communicator's setup left behind (creator not alive, older than a minute);\n"
           "--dry-run: only lists them.\n"
           "--markdown: the settings table as Markdown rows (the README's).\n");
    return 0;
  }
  if (argc > 1 && strcmp(argv[1], "--cleanup") == 0) {
    const int dry = argc > 2 && strcmp(argv[2], "--dry-run") == 0;
    if (argc > 2 + dry) {
      fprintf(stderr, "gcoll_info: unknown argument '%s' (try --help)\n", argv[2 + dry]);
      return 2;
    }
    const int n = gcoll_cleanup_segments(stdout, dry);
    if (n < 0) {
      fprintf(stderr, "gcoll_info: cannot read /dev/shm\n");
      return 1;
    }
    printf("%d segment(s) %s\n", n, dry ? "to remove" : "removed");
    return 0;
  }
  if (argc == 2 && strcmp(argv[1], "--markdown") == 0) return gcoll_print_settings_markdown(stdout) == 0 ? 0 : 1;
  if (argc > 1) {
    fprintf(stderr, "gcoll_info: unknown argument '%s' (try --help)\n", argv[1]);
    return 2;
  }
  return gcoll_print_info(stdout) == 0 ? 0 : 1;
}
