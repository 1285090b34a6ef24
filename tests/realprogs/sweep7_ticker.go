package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"
)

func main() {
	var mu sync.Mutex
	count := 0
	ln, err := net.Listen("tcp", "127.0.0.1:"+os.Args[1])
	if err != nil {
		fmt.Println("listen:", err)
		os.Exit(1)
	}
	http.HandleFunc("/inc", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		count++
		c := count
		mu.Unlock()
		fmt.Fprintf(w, "%d", c)
	})
	go http.Serve(ln, nil)
	results := make(chan string)
	var wg sync.WaitGroup
	for g := 0; g < 3; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			sum := 0
			for i := 0; i < 1000; i++ {
				sum = (sum*31 + i*g) % 1000003
			}
			results <- "worker " + strconv.Itoa(g) + " " + strconv.Itoa(sum)
		}(g)
	}
	go func() { wg.Wait(); close(results) }()
	for r := range results {
		_ = r
	}
	client := &http.Client{Timeout: 20 * time.Second}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for step := 1; step <= 100; step++ {
		<-tick.C
		resp, err := client.Get("http://127.0.0.1:" + os.Args[1] + "/inc")
		if err != nil {
			fmt.Println("step", step, "error", err)
			os.Exit(1)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println("step", step, "count", string(body))
	}
	fmt.Println("done")
}
