// Command fakeupstream serves a fakeupstream script on 127.0.0.1 for tests
// outside Go (the Node e2e suite). It prints its base URL (ending in /v1) on
// the first line of stdout and serves until it is signalled.
//
//	go run ./server/v1/fakeupstream/cmd/fakeupstream -script FILE -addr 127.0.0.1:0
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/toolhost/toolhost/server/v1/fakeupstream"
)

func main() {
	script := flag.String("script", "", "JSON script file (see package fakeupstream)")
	addr := flag.String("addr", "127.0.0.1:0", "listen address (loopback only)")
	flag.Parse()
	if *script == "" {
		fmt.Fprintln(os.Stderr, "fakeupstream: -script FILE is required")
		os.Exit(2)
	}
	s, err := fakeupstream.LoadScript(*script)
	if err != nil {
		fmt.Fprintf(os.Stderr, "fakeupstream: %v\n", err)
		os.Exit(2)
	}
	srv, err := fakeupstream.Listen(*addr, s)
	if err != nil {
		fmt.Fprintf(os.Stderr, "fakeupstream: %v\n", err)
		os.Exit(1)
	}
	fmt.Println(srv.URL())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	_ = srv.Close()
}
