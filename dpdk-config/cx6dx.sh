# scripts/run.sh's part of the cx6dx preset (cx6dx.toml holds tqfwd's
# options, EAL arguments and the PCI addresses run.sh checks).
PRESET_KIND=hardware
EXPECT_DRIVER=mlx5_core   # bifurcated: the ports stay on the kernel driver
HUGE_MIN_MB=2048          # 4096-descriptor rings; MPRQ allocates its own stride buffers
