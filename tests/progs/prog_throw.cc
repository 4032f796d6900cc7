// prog_throw.cc: a C++ program whose exceptions cross one function, dc_thrower, for the
// harm test (a return probe on it breaks the unwinding in every process running it).
//   prog_throw N      N calls of dc_thrower, each throwing through it; prints "caught C",
//                     exits 0 when C == N, 1 otherwise
//   prog_throw wait   prints "ready PID", blocks reading stdin until EOF, then calls
//                     dc_thrower once without throwing (one normal return); exits 0
//   prog_throw mix N  N calls of dc_thrower(i, i even): the even ones throw; prints
//                     "caught C returned R" (R: the sum of the values returned, i + 1
//                     each), exits 0 when C is the count of even i < N, 1 otherwise
//   prog_throw deep N D  N rounds of dc_recurse(D), which recurses D levels and throws
//                     from the bottom, then one dc_thrower(0, 0); prints "caught C"
//                     (C == N: exit 0)
//   prog_throw long N N calls of a member function whose mangled name is 106 bytes
//                     (longer than the 63 datacrumbs kept before issue 12), i from 0,
//                     each returning i + 1; prints "returned R" (R: their sum), exits 0
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <unistd.h>

extern "C" __attribute__((noinline)) int dc_thrower(int i, int do_throw)
{
	if (do_throw)
		throw std::runtime_error("thrown");
	return i + 1;
}

extern "C" __attribute__((noinline)) int dc_recurse(int d)
{
	if (d == 0)
		throw std::runtime_error("bottom");
	return dc_recurse(d - 1) + 1;
}

namespace datacrumbs_test {
struct a_class_whose_name_makes_the_mangled_name_long {
	static int a_member_function_with_a_long_name(int i);
};
__attribute__((noinline)) int
a_class_whose_name_makes_the_mangled_name_long::a_member_function_with_a_long_name(int i)
{
	return i + 1;
}
} // namespace datacrumbs_test

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "long")) {
		long n = atol(argv[2]), returned = 0;
		for (long i = 0; i < n; i++)
			returned += datacrumbs_test::a_class_whose_name_makes_the_mangled_name_long::
				a_member_function_with_a_long_name((int)i);
		printf("returned %ld\n", returned);
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "deep")) {
		long n = atol(argv[2]), caught = 0;
		for (long i = 0; i < n; i++) {
			try {
				dc_recurse(atoi(argv[3]));
			} catch (const std::runtime_error &) {
				caught++;
			}
		}
		printf("caught %ld\n", caught);
		return caught == n && dc_thrower(0, 0) == 1 ? 0 : 1;
	}
	if (argc != 2 && !(argc == 3 && !strcmp(argv[1], "mix"))) {
		fprintf(stderr, "usage: prog_throw N | wait | mix N | deep N D | long N\n");
		return 2;
	}
	if (!strcmp(argv[1], "wait")) {
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
		char c;
		while (read(0, &c, 1) > 0)
			;
		return dc_thrower(1, 0) == 2 ? 0 : 1;
	}
	if (argc == 3 && !strcmp(argv[1], "mix")) {
		long n = atol(argv[2]), caught = 0, returned = 0;
		for (long i = 0; i < n; i++) {
			try {
				returned += dc_thrower((int)i, i % 2 == 0);
			} catch (const std::runtime_error &) {
				caught++;
			}
		}
		printf("caught %ld returned %ld\n", caught, returned);
		return caught == (n + 1) / 2 ? 0 : 1;
	}
	long n = atol(argv[1]), caught = 0;
	for (long i = 0; i < n; i++) {
		try {
			dc_thrower((int)i, 1);
		} catch (const std::runtime_error &) {
			caught++;
		}
	}
	printf("caught %ld\n", caught);
	return caught == n ? 0 : 1;
}
