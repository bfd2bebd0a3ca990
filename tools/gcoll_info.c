/* gcoll_info: prints the library's version, build options, every GCOLL_* setting
 * with its current value (from this environment) and help, and the algorithm table
 * (default size ranges, GCOLL_TUNE rules or why they are ignored). Needs no MPI job.
 * --cleanup: removes the /dev/shm segments of killed jobs (gcoll_cleanup_segments).
 * --markdown: the settings table as Markdown (the README's, checked in CI).
 * --topology [--ranks-per-gpu N]: the node topology, the paths gcoll takes on it and the
 * cost model's picks (gcoll_print_topology). */
#include <stdlib.h>
#include <gcoll/gcoll.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
    printf("usage: gcoll_info [--markdown | --cleanup [--dry-run] | --topology [--ranks-per-gpu N]]\n"
           "Prints gcoll's version, build options, settings and algorithms.\n"
           "--cleanup: removes the shared-memory segments in /dev/shm that jobs killed during a\n"
           "communicator's setup left behind (creator not alive, older than a minute);\n"
           "--dry-run: only lists them.\n"
           "--markdown: the settings table as Markdown rows (the README's).\n"
           "--topology: the node's GPUs, NVLinks, PCIe paths, NUMA nodes and NICs as nvidia-smi topo -m\n"
           "prints them (from GCOLL_TOPO_FILE, else detected), the P2P verdicts, islands, NVLink rings,\n"
           "rail NICs, the path each collective takes on device buffers with N ranks per GPU\n"
           "(default 1), and the cost model's links, picks, predicted times and bus bandwidths.\n");
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
  if (argc > 1 && strcmp(argv[1], "--topology") == 0) {
    int per_gpu = 1;
    if (argc == 4 && strcmp(argv[2], "--ranks-per-gpu") == 0) {
      per_gpu = atoi(argv[3]);
      if (per_gpu < 1 || per_gpu > 64) {
        fprintf(stderr, "gcoll_info: --ranks-per-gpu takes 1 to 64\n");
        return 2;
      }
    } else if (argc != 2) {
      fprintf(stderr, "gcoll_info: usage: gcoll_info --topology [--ranks-per-gpu N]\n");
      return 2;
    }
    return gcoll_print_topology(stdout, per_gpu) == 0 ? 0 : 1;
  }
  if (argc == 2 && strcmp(argv[1], "--markdown") == 0) return gcoll_print_settings_markdown(stdout) == 0 ? 0 : 1;
  if (argc > 1) {
    fprintf(stderr, "gcoll_info: unknown argument '%s' (try --help)\n", argv[1]);
    return 2;
  }
  return gcoll_print_info(stdout) == 0 ? 0 : 1;
}
