/* An intrusive doubly linked list: the context's record of the objects made from it, so that
 * destroying the context can destroy what is still alive. A head is a link whose next and prev
 * point at itself; vka_list_init makes one. */
#ifndef VKA_LIST_H
#define VKA_LIST_H

#include <stddef.h>

typedef struct vka_link {
    struct vka_link *prev, *next;
} vka_link;

static inline void vka_list_init(vka_link *head) { head->prev = head->next = head; }

static inline void vka_list_push(vka_link *head, vka_link *node)
{
    node->next = head->next;
    node->prev = head;
    head->next->prev = node;
    head->next = node;
}

/* Unlinks `node` (a no-op for one never linked: both pointers NULL). */
static inline void vka_list_remove(vka_link *node)
{
    if (!node->next) return;
    node->prev->next = node->next;
    node->next->prev = node->prev;
    node->prev = node->next = 0;
}

static inline int vka_list_empty(const vka_link *head) { return head->next == head; }

/* The struct of type `type` whose member `member` is the link `link`. */
#define VKA_CONTAINER_OF(link, type, member) ((type *)((char *)(link) - offsetof(type, member)))

#endif
