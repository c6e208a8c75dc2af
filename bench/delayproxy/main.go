// Command delayproxy forwards TCP connections with a fixed added delay
// each way, for benchmarks on a kernel without netem: every chunk read
// from one side is written to the other delay after it arrived, in
// order, so the link keeps its bandwidth and gains latency.
//
//	delayproxy -listen 127.0.0.1:0 -to 127.0.0.1:7070 -delay 20ms
//
// It prints the address it listens on, then serves until killed.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"sync"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	to := flag.String("to", "", "address to forward to")
	delay := flag.Duration("delay", 0, "added delay each way")
	flag.Parse()
	if *to == "" {
		fmt.Fprintln(os.Stderr, "delayproxy: -to is required")
		os.Exit(2)
	}
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(l.Addr())
	for {
		c, err := l.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go proxy(c, *to, *delay)
	}
}

func proxy(c net.Conn, to string, delay time.Duration) {
	u, err := net.Dial("tcp", to)
	if err != nil {
		c.Close()
		return
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); pipe(u, c, delay) }()
	go func() { defer wg.Done(); pipe(c, u, delay) }()
	wg.Wait()
	c.Close()
	u.Close()
}

type chunk struct {
	at   time.Time
	data []byte
}

// pipe copies from src to dst, each chunk delay after it was read.
func pipe(dst, src net.Conn, delay time.Duration) {
	q := make(chan chunk, 4096)
	go func() {
		defer close(q)
		for {
			buf := make([]byte, 64<<10)
			n, err := src.Read(buf)
			if n > 0 {
				q <- chunk{time.Now().Add(delay), buf[:n]}
			}
			if err != nil {
				return
			}
		}
	}()
	for ch := range q {
		time.Sleep(time.Until(ch.at))
		if _, err := dst.Write(ch.data); err != nil {
			src.Close() // the reader ends; what it queued is dropped
			for range q {
			}
			return
		}
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
}
