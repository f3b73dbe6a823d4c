// SPDX-License-Identifier: GPL-2.0
/*
 * Attach a section sframe-synth made to the file it describes, as
 * `sframe-synth attach` does (UNWIND_USER_FILE_ATTACH), for a guest that
 * sframe-synth does not run in: make oracle-arm64's, where the host's
 * Rust toolchain has no arm64 target. The section is a file of
 * sframe-synth's cache (its addresses relative to the file's link-time
 * addresses: sframe_addr 0).
 *
 *   sframe-attach FILE SECTION
 *
 * Needs CAP_PERFMON or CAP_SYS_ADMIN. The table stays attached after this
 * program exits, until detached.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/unwind_user.h>

int main(int argc, char **argv)
{
	struct unwind_user_file f = { 0 };
	struct stat st;
	void *section;
	int sfd;

	if (argc != 3) {
		fprintf(stderr, "usage: %s FILE SECTION\n", argv[0]);
		return 2;
	}
	f.fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	sfd = open(argv[2], O_RDONLY | O_CLOEXEC);
	if (f.fd < 0 || sfd < 0 || fstat(sfd, &st) || !st.st_size) {
		fprintf(stderr, "%s: %s or %s: %s\n", argv[0], argv[1], argv[2],
			strerror(errno ? errno : EINVAL));
		return 1;
	}
	section = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, sfd, 0);
	if (section == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	f.sframe_ptr = (uintptr_t)section;
	f.sframe_size = st.st_size;
	if (prctl(PR_UNWIND_USER, UNWIND_USER_FILE_ATTACH, &f, sizeof(f), 0)) {
		fprintf(stderr, "%s: attaching %s to %s: %s\n", argv[0], argv[2],
			argv[1], strerror(errno));
		return 1;
	}
	printf("sframe-attach: %s: %lld bytes of section attached\n", argv[1],
	       (long long)st.st_size);
	return 0;
}
