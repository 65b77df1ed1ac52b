// Command pause is the real node's sandbox ("pause") image: it holds a pod's namespaces open and
// sleeps until SIGTERM or SIGINT. As PID 1 of a pod with a shared process namespace it also reaps
// orphaned children. Built static (CGO_ENABLED=0) by tests/cluster/node.py.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
