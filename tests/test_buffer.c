/* The buffers' room and their views' ranges (src/memory/buffer.c), on the host: Mesa 22's lavapipe
 * compiles a kernel again for each combination, over its texel bindings, of a VkBuffer size that is
 * a power of two and of zero bits 0-7 / 8-15 in a view's byte count (docs/KNOWN_ISSUES.md). */
#include "memory/buffer.h"
#include "test_util.h"

/* Views that reach their buffer's end grow into its room until bits 0-7 and 8-15 of their byte
 * count are non-zero; other views keep their ranges; no buffer's size is a power of two. */
static void test_view_ranges(void)
{
    /* every range a view of whole texels may have, up to three times 64 KiB, reaching the end */
    static const VkDeviceSize texels[] = {2, 4, 8, 16};
    int bad = 0;
    for (size_t t = 0; t < sizeof texels / sizeof texels[0]; t++) {
        const VkDeviceSize texel = texels[t];
        for (VkDeviceSize range = texel; range <= 3 * 65536; range += texel) {
            VkDeviceSize grown = vka_view_range(range, VKA_VIEW_ROOM, 0, range, texel, UINT32_MAX);
            int ok = (grown & 0xff) && ((grown >> 8) & 0xff) && grown % texel == 0 && grown >= range &&
                     grown - range <= 256 + texel && grown + texel <= range + VKA_VIEW_ROOM;
            if (!ok && bad++ < 5) CHECK_MSG(0, "range %llu texel %llu grew to %llu", (unsigned long long)range,
                                            (unsigned long long)texel, (unsigned long long)grown);
        }
    }
    CHECK(bad == 0);
    /* known values: 64 KiB of floats, 256 bytes of vec4s, the 16-byte placeholder, a fine range */
    CHECK(vka_view_range(65536, VKA_VIEW_ROOM, 0, 65536, 4, UINT32_MAX) == 65536 + 256 + 4);
    CHECK(vka_view_range(256, VKA_VIEW_ROOM, 0, 256, 16, UINT32_MAX) == 272);
    CHECK(vka_view_range(16, VKA_VIEW_ROOM, 0, 16, 16, UINT32_MAX) == 272);
    CHECK(vka_view_range(1000, VKA_VIEW_ROOM, 0, 1000, 4, UINT32_MAX) == 1000);
    /* at an offset, reaching the end: the end is what counts */
    CHECK(vka_view_range(4096 + 512, VKA_VIEW_ROOM, 4096, 512, 4, UINT32_MAX) == 516);
    /* less than a texel of padding after the view: still its end */
    CHECK(vka_view_range(184, VKA_VIEW_ROOM, 0, 176, 16, UINT32_MAX) == 272);
    /* a view with a whole texel of its buffer after it: that may be another binding's, unchanged */
    CHECK(vka_view_range(4096, VKA_VIEW_ROOM, 0, 2048, 4, UINT32_MAX) == 2048);
    CHECK(vka_view_range(4096, VKA_VIEW_ROOM, 1024, 2048, 4, UINT32_MAX) == 2048);
    /* no room (a borrowed buffer), too little room, or past maxTexelBufferElements: unchanged */
    CHECK(vka_view_range(65536, 0, 0, 65536, 4, UINT32_MAX) == 65536);
    CHECK(vka_view_range(65536, 200, 0, 65536, 4, UINT32_MAX) == 65536);
    CHECK(vka_view_range(65536, VKA_VIEW_ROOM, 0, 65536, 4, 16384) == 65536);
    CHECK(vka_view_range(65536, VKA_VIEW_ROOM, 0, 65536, 4, 16384 + 65) == 65536 + 256 + 4);
    /* the buffers' room: at least VKA_VIEW_ROOM, never a VkBuffer size that is a power of two */
    int pot = 0;
    for (VkDeviceSize size = 16; size <= (1u << 22); size += 16) {
        VkDeviceSize room = vka_buffer_room(size, (VkDeviceSize)1 << 32), bytes = size + room;
        if (room < VKA_VIEW_ROOM || (bytes & (bytes - 1)) == 0) pot++;
    }
    CHECK(pot == 0);
    CHECK(vka_buffer_room(4096 - VKA_VIEW_ROOM, (VkDeviceSize)1 << 32) == VKA_VIEW_ROOM + 16);
    CHECK(vka_buffer_room(1000, 1000 + 2 * VKA_VIEW_ROOM - 1) == 0);
    CHECK(vka_buffer_room(1000, 1000 + 2 * VKA_VIEW_ROOM) == VKA_VIEW_ROOM);
}

int main(void)
{
    RUN_TEST(test_view_ranges);
    return test_finish();
}
