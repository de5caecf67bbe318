# scripts/run.sh's part of the null preset (null.toml holds tqfwd's options
# and EAL arguments): no setup, no peers.
PRESET_KIND=software      # may fall back to --no-huge when no huge pages
NO_HUGE_MB=512            # --no-huge -m 512 fits tqfwd's pool (~14k mbufs)
