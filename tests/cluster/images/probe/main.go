// Command probe is the real node's test image: one static binary (CGO_ENABLED=0), no shell.
//
//	probe serve [-addr :8080]   HTTP: "/" answers "probe <hostname>", "/get?url=U" fetches U,
//	                            "/resolve?name=N" resolves N (through the pod's resolv.conf)
//	probe get URL               fetch URL, print the body, exit 0 on HTTP 200 (Jobs, kubectl exec)
//	probe resolve NAME          print NAME's addresses, exit 0 when it resolves
//
// It logs one line per request to stdout, so `kubectl logs` has something to show.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// fetch opens a new connection for every request (no keep-alive pool): a NetworkPolicy applies
// to new connections, so a pooled one would outlive the policy that refuses it.
func fetch(url string) (string, error) {
	client := &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{DisableKeepAlives: true},
	}
	resp, err := client.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return string(body), fmt.Errorf("%s: HTTP %d", url, resp.StatusCode)
	}
	return string(body), nil
}

func resolve(name string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return net.DefaultResolver.LookupHost(ctx, name)
}

func serve(args []string) {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	addr := fs.String("addr", ":8080", "listen address")
	_ = fs.Parse(args)
	host, _ := os.Hostname()
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Printf("request %s %s from %s\n", r.Method, r.URL.Path, r.RemoteAddr)
		fmt.Fprintf(w, "probe %s\n", host)
	})
	mux.HandleFunc("/get", func(w http.ResponseWriter, r *http.Request) {
		url := r.URL.Query().Get("url")
		fmt.Printf("get %s from %s\n", url, r.RemoteAddr)
		body, err := fetch(url)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		io.WriteString(w, body)
	})
	mux.HandleFunc("/resolve", func(w http.ResponseWriter, r *http.Request) {
		name := r.URL.Query().Get("name")
		fmt.Printf("resolve %s from %s\n", name, r.RemoteAddr)
		addrs, err := resolve(name)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		fmt.Fprintln(w, strings.Join(addrs, "\n"))
	})
	srv := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
		<-sigs
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}()
	fmt.Printf("probe serving on %s as %s\n", *addr, host)
	if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: probe serve|get URL|resolve NAME")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "serve":
		serve(os.Args[2:])
	case "get":
		body, err := fetch(os.Args[2])
		fmt.Print(body)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case "resolve":
		addrs, err := resolve(os.Args[2])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(strings.Join(addrs, "\n"))
	default:
		fmt.Fprintln(os.Stderr, "unknown command:", os.Args[1])
		os.Exit(2)
	}
}
