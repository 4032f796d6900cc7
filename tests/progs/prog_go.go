// prog_go.go: a Go program doing file I/O, for the harm and return tests (a uretprobe on
// a Go function breaks the Go runtime: "unexpected return pc").
//   prog_go DIR N   writes N files DIR/f0..f(N-1) with main.writeFile, reads each back
//                   with main.readFile, removes them; prints "wrote N read B" (B: bytes
//                   read, 100 per file) and exits 0 when every byte came back, 1 if not
//   prog_go wait DIR   prints "ready PID", reads stdin to EOF, then does "DIR 1"
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
)

//go:noinline
func writeFile(path string, data []byte) error {
	return os.WriteFile(path, data, 0o644)
}

//go:noinline
func readFile(path string) (int, error) {
	b, err := os.ReadFile(path)
	return len(b), err
}

func run(dir string, n int) int {
	data := make([]byte, 100)
	for i := range data {
		data[i] = byte('a' + i%26)
	}
	total := 0
	for i := 0; i < n; i++ {
		p := filepath.Join(dir, "f"+strconv.Itoa(i))
		if err := writeFile(p, data); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		got, err := readFile(p)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		total += got
		os.Remove(p)
	}
	fmt.Printf("wrote %d read %d\n", n, total)
	if total != 100*n {
		return 1
	}
	return 0
}

func main() {
	if len(os.Args) == 3 && os.Args[1] == "wait" {
		fmt.Printf("ready %d\n", os.Getpid())
		io.Copy(io.Discard, bufio.NewReader(os.Stdin))
		os.Exit(run(os.Args[2], 1))
	}
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: prog_go DIR N | prog_go wait DIR")
		os.Exit(2)
	}
	n, err := strconv.Atoi(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Exit(run(os.Args[1], n))
}
