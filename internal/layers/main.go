package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// natsServer is the module a client or a worker should never link
// (STYLE.md 13).
const natsServer = "github.com/nats-io/nats-server/"

// listed is the part of `go list -json` this program reads.
type listed struct {
	ImportPath string
	Standard   bool
	Imports    []string
	Module     *struct {
		Path string
		Main bool
	}
}

func main() {
	verbose := flag.Bool("v", false, "also print the allowlisted violations")
	deps := flag.Bool("deps", false, "also print the size of ./client's and ./agents' dependencies and whether nats-server is among them")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "layers: no arguments expected; run it from the module's root")
		os.Exit(2)
	}
	os.Exit(run(os.Stdout, *verbose, *deps))
}

// run checks the module in the current directory and returns the exit
// status: 0 when it passes, 1 on a violation, 2 when go list fails.
func run(w io.Writer, verbose, deps bool) int {
	all, err := goList("./...")
	if err != nil {
		fmt.Fprintln(os.Stderr, "layers:", err)
		return 2
	}
	module := ""
	for _, p := range all {
		if p.Module != nil && p.Module.Main {
			module = p.Module.Path
			break
		}
	}
	if module == "" {
		fmt.Fprintln(os.Stderr, "layers: go list ./... found no package of the main module")
		return 2
	}
	var pkgs []pkg
	for _, p := range all {
		rel, ok := relPath(module, p.ImportPath)
		if !ok {
			continue
		}
		q := pkg{path: rel}
		for _, imp := range p.Imports {
			if r, ok := relPath(module, imp); ok {
				q.imports = append(q.imports, r)
			}
		}
		pkgs = append(pkgs, q)
	}

	r := check(pkgs, layers, allowed, apart...)
	report(w, r, module, verbose)
	linked := false
	if deps {
		// The SDK and the worker runtime never link a server (STYLE.md 13).
		for _, target := range []string{"./client", "./agents"} {
			line, err := depsLine(target)
			if err != nil {
				fmt.Fprintln(os.Stderr, "layers:", err)
				return 2
			}
			fmt.Fprintln(w, line)
			linked = linked || strings.Contains(line, "nats-server: yes")
		}
	}
	if !r.ok() || linked {
		return 1
	}
	return 0
}

func report(w io.Writer, r result, module string, verbose bool) {
	for _, v := range r.violations {
		fmt.Fprintln(w, v.String(module))
	}
	for _, e := range r.stale {
		fmt.Fprintf(w, "allowlisted import %s → %s is no longer an upward import: remove it from allowed in internal/layers/layers.go\n", e.from, e.to)
	}
	for _, p := range r.unplaced {
		fmt.Fprintf(w, "%s has no layer: add it to the table in internal/layers/layers.go\n", importPath(module, p))
	}
	for _, c := range r.cycles {
		fmt.Fprintf(w, "import cycle between groups: %s\n", c)
	}
	if verbose {
		for _, v := range r.known {
			fmt.Fprintf(w, "allowed (#22): %s\n", v.String(module))
		}
	}
	if !r.ok() {
		fmt.Fprintf(w, "layers: FAIL: %d upward imports, %d stale allowlist entries, %d packages with no layer, %d cycles between groups\n",
			len(r.violations), len(r.stale), len(r.unplaced), len(r.cycles))
		return
	}
	but := ""
	if len(r.known) > 0 {
		but = fmt.Sprintf(" but %d allowlisted (#22)", len(r.known))
	}
	fmt.Fprintf(w, "layers: OK: %d packages in %d groups over %d layers, %d imports between them: no cycle, no upward import%s\n",
		r.packages, r.groups, r.layers, r.imports, but)
}

// depsLine runs `go list -deps` on target and says how many packages it
// links and by which imports it reaches nats-server, if it does.
func depsLine(target string) (string, error) {
	all, err := goList("-deps", target)
	if err != nil {
		return "", err
	}
	if len(all) == 0 {
		return "", fmt.Errorf("go list -deps %s listed nothing", target)
	}
	std := 0
	imports := map[string][]string{}
	for _, p := range all {
		if p.Standard {
			std++
		}
		imports[p.ImportPath] = p.Imports
	}
	// -deps lists a package after its dependencies: the target comes last.
	root := all[len(all)-1].ImportPath
	verdict := "no"
	if path := pathTo(root, imports, func(p string) bool { return strings.HasPrefix(p, natsServer) }); path != nil {
		verdict = "yes, " + strings.Join(path, " → ")
	}
	return fmt.Sprintf("go list -deps %s: %d packages (%d standard library, %d others); nats-server: %s",
		target, len(all), std, len(all)-std, verdict), nil
}

// pathTo returns a shortest chain of imports from root to a package for
// which want holds, or nil when there is none.
func pathTo(root string, imports map[string][]string, want func(string) bool) []string {
	prev := map[string]string{root: ""}
	queue := []string{root}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if want(n) {
			var path []string
			for x := n; x != ""; x = prev[x] {
				path = append([]string{x}, path...)
			}
			return path
		}
		for _, m := range imports[n] {
			if _, ok := prev[m]; !ok {
				prev[m] = n
				queue = append(queue, m)
			}
		}
	}
	return nil
}

// goList runs go list -json with args and decodes the packages it prints.
func goList(args ...string) ([]listed, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("go", append([]string{"list", "-json=ImportPath,Standard,Imports,Module"}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go list %s: %w\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	var out []listed
	dec := json.NewDecoder(&stdout)
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("go list %s: %w", strings.Join(args, " "), err)
		}
		out = append(out, p)
	}
}
